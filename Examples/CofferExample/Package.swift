// swift-tools-version: 6.1
// An app's view of Coffer: a package that depends on it by path and uses the umbrella API only.
import PackageDescription

let package = Package(
    name: "CofferExample",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [
        .package(path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "CofferExample",
            dependencies: [.product(name: "Coffer", package: "Coffer")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
