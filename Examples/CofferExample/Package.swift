// swift-tools-version: 6.1
// An app's view of Coffer: a package that depends on it by path and uses the umbrella API only.

import Foundation
import PackageDescription

// A path dependency's package identity is the name of its folder, which is whatever the checkout
// of Coffer is called; an app that depends on Coffer by URL writes `package: "coffer"`.
let cofferPackage = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../..").standardizedFileURL.lastPathComponent

let package = Package(
    name: "CofferExample",
    platforms: [.macOS(.v13), .iOS(.v16)],
    dependencies: [
        .package(path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "CofferExample",
            dependencies: [.product(name: "Coffer", package: cofferPackage)]
        )
    ],
    swiftLanguageModes: [.v6]
)
