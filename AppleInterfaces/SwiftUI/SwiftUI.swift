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
