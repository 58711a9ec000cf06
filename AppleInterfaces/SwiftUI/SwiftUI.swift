// Stand-in for the parts of Apple's `SwiftUI` that Coffer uses, for Scripts/typecheck-apple.sh.
// Declarations only: nothing here is ever run (every body traps).
//
// Each declaration is the Swift form shown on its Apple documentation page (linked above it),
// with the availability listed there. SwiftUI is a Swift module; the declarations below keep
// its attributes as documented (`@frozen`, `@propertyWrapper`, `@dynamicMemberLookup`,
// `nonmutating set`). Not modelled: the `State()` macro that Apple's documentation says replaces
// the property wrapper when building with Xcode 27 or later (Coffer targets the wrapper, which
// Xcode 26 and earlier use).

/// https://developer.apple.com/documentation/swiftui/dynamicproperty — `protocol DynamicProperty`
/// with one requirement, `mutating func update()`, which has a default implementation (conforming
/// types such as `State` do not write it).
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
public protocol DynamicProperty {
    /// https://developer.apple.com/documentation/swiftui/dynamicproperty/update()
    mutating func update()
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
extension DynamicProperty {
    /// The default implementation (the page lists no requirement a conforming type must write).
    public mutating func update() {}
}

/// https://developer.apple.com/documentation/swiftui/state — `@frozen @propertyWrapper struct State<Value>`,
/// conforming to `DynamicProperty`.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
@frozen @propertyWrapper
public struct State<Value>: DynamicProperty {
    /// https://developer.apple.com/documentation/swiftui/state/init(wrappedvalue:) — `init(wrappedValue value: Value)`
    public init(wrappedValue value: Value) { fatalError("interface only") }
    /// https://developer.apple.com/documentation/swiftui/state/init(initialvalue:) — `init(initialValue value: Value)`
    public init(initialValue value: Value) { fatalError("interface only") }
    /// https://developer.apple.com/documentation/swiftui/state/wrappedvalue — `var wrappedValue: Value { get nonmutating set }`
    public var wrappedValue: Value {
        get { fatalError("interface only") }
        nonmutating set { fatalError("interface only") }
    }
    /// https://developer.apple.com/documentation/swiftui/state/projectedvalue — `var projectedValue: Binding<Value> { get }`
    public var projectedValue: Binding<Value> { fatalError("interface only") }
}

/// https://developer.apple.com/documentation/swiftui/binding —
/// `@frozen @propertyWrapper @dynamicMemberLookup struct Binding<Value>`, conforming to `DynamicProperty`.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
@frozen @propertyWrapper @dynamicMemberLookup
public struct Binding<Value>: DynamicProperty {
    /// https://developer.apple.com/documentation/swiftui/binding/init(get:set:) —
    /// `init(get: @escaping () -> Value, set: @escaping (Value) -> Void)`.
    /// Not verified against the current page: whether the closures are `@Sendable` in the
    /// newest SDKs (Coffer does not call it).
    public init(get: @escaping () -> Value, set: @escaping (Value) -> Void) { fatalError("interface only") }
    /// https://developer.apple.com/documentation/swiftui/binding/wrappedvalue — `var wrappedValue: Value { get nonmutating set }`
    public var wrappedValue: Value {
        get { fatalError("interface only") }
        nonmutating set { fatalError("interface only") }
    }
    /// https://developer.apple.com/documentation/swiftui/binding/projectedvalue — `var projectedValue: Binding<Value> { get }`
    public var projectedValue: Binding<Value> { fatalError("interface only") }
    /// https://developer.apple.com/documentation/swiftui/binding/subscript(dynamicmember:) —
    /// `subscript<Subject>(dynamicMember keyPath: WritableKeyPath<Value, Subject>) -> Binding<Subject> { get }`
    public subscript<Subject>(dynamicMember keyPath: WritableKeyPath<Value, Subject>) -> Binding<Subject> {
        fatalError("interface only")
    }
}

/// https://developer.apple.com/documentation/swiftui/environmentkey — `protocol EnvironmentKey`
/// with `associatedtype Value` and `static var defaultValue: Self.Value { get }`.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
public protocol EnvironmentKey {
    /// https://developer.apple.com/documentation/swiftui/environmentkey/value
    associatedtype Value
    /// https://developer.apple.com/documentation/swiftui/environmentkey/defaultvalue
    static var defaultValue: Self.Value { get }
}

/// https://developer.apple.com/documentation/swiftui/environmentvalues — `struct EnvironmentValues`.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
public struct EnvironmentValues {
    /// https://developer.apple.com/documentation/swiftui/environmentvalues/init() — `init()`
    public init() { fatalError("interface only") }
    /// https://developer.apple.com/documentation/swiftui/environmentvalues/subscript(_:) —
    /// `subscript<K>(key: K.Type) -> K.Value where K : EnvironmentKey { get set }`
    public subscript<K>(key: K.Type) -> K.Value where K: EnvironmentKey {
        get { fatalError("interface only") }
        set { fatalError("interface only") }
    }
}

/// https://developer.apple.com/documentation/swiftui/environment —
/// `@frozen @propertyWrapper struct Environment<Value>`, conforming to `DynamicProperty`.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
@frozen @propertyWrapper
public struct Environment<Value>: DynamicProperty {
    /// https://developer.apple.com/documentation/swiftui/environment/init(_:)-8slkf —
    /// `init(_ keyPath: KeyPath<EnvironmentValues, Value>)`
    public init(_ keyPath: KeyPath<EnvironmentValues, Value>) { fatalError("interface only") }
    /// https://developer.apple.com/documentation/swiftui/environment/wrappedvalue — `var wrappedValue: Value { get }`
    public var wrappedValue: Value { fatalError("interface only") }
}

/// https://developer.apple.com/documentation/swiftui/view — `@MainActor @preconcurrency protocol View`
/// with `associatedtype Body : View` and `var body: Self.Body { get }` (its `@ViewBuilder`
/// attribute is not modelled: Coffer writes no `body`).
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
@MainActor @preconcurrency
public protocol View {
    /// https://developer.apple.com/documentation/swiftui/view/body-swift.associatedtype
    associatedtype Body: View
    /// https://developer.apple.com/documentation/swiftui/view/body-swift.property
    var body: Self.Body { get }
}

/// `Never` is a `View` (the `Body` of primitive views), as SwiftUI declares.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
extension Never: View {
    public typealias Body = Never
    public var body: Never { fatalError("interface only") }
}

/// What the stand-in `environment(_:_:)` returns (SwiftUI's is an opaque `some View`).
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
public struct _StandInModifiedView: View {
    nonisolated init() {}
    public var body: Never { fatalError("interface only") }
}

@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
extension View {
    /// https://developer.apple.com/documentation/swiftui/view/environment(_:_:) —
    /// `nonisolated func environment<V>(_ keyPath: WritableKeyPath<EnvironmentValues, V>, _ value: V) -> some View`
    nonisolated public func environment<V>(_ keyPath: WritableKeyPath<EnvironmentValues, V>, _ value: V) -> some View {
        _StandInModifiedView()
    }
}
