// swift-tools-version: 6.1
// Coffer: the local storage layer of a mobile app, as one Swift package.

import PackageDescription

let package = Package(
    name: "Coffer",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "Coffer", targets: ["Coffer"]),
        .library(name: "CofferWallet", targets: ["CofferWallet"]),
        .library(name: "CofferCrypto", targets: ["CofferCrypto"]),
        .library(name: "CofferDeniable", targets: ["CofferDeniable"]),
        .library(name: "CofferStateMachines", targets: ["CofferStateMachines"]),
        .library(name: "CofferSettings", targets: ["CofferSettings"]),
        .library(name: "CofferDatabase", targets: ["CofferDatabase"]),
        .library(name: "CofferMediaCache", targets: ["CofferMediaCache"]),
        .library(name: "CofferSecureStorage", targets: ["CofferSecureStorage"]),
        .executable(name: "coffer", targets: ["coffer"]),
    ],
    // `PostgreSQL`: the wallet's PostgreSQL backend (docs/server.md). Off by default, so an app
    // that does not ask for it resolves and builds no NIO or PostgreSQL package; a server enables
    // it with `.package(url: …, from: …, traits: ["PostgreSQL"])`, or `swift build --traits PostgreSQL`.
    traits: [
        .trait(name: "PostgreSQL", description: "The wallet's PostgreSQL backend, on postgres-nio's PostgresClient.")
    ],
    // Semantic-version ranges, so an app that already depends on these packages resolves with
    // Coffer. The lower bounds are the versions Coffer is built and tested with (swift-crypto
    // with both 3.12.3 and 4.5.2); see the README.
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // `swift package generate-documentation` (Scripts/docs.sh); a command plugin, linked into nothing.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // The PostgreSQL backend's driver; linked only with the `PostgreSQL` trait.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        .target(name: "CofferFileModes", dependencies: ["CofferSync"]),
        // The package's one lock type and its way off the caller's executor.
        .target(name: "CofferSync"),
        .target(
            name: "CofferSQLite",
            dependencies: [
                "CofferSync", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "CofferCrypto",
            dependencies: [
                "CofferSync",
                "CSodium",
                "CofferFileModes",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "CofferWallet",
            dependencies: [
                "CofferSync",
                "CofferCrypto",
                "CofferSQLite",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the one loop that steps search rows without GRDB's Row.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
            ]
        ),
        .target(
            name: "CofferDeniable",
            dependencies: [
                "CofferSync",
                "CofferCrypto",
                "CZlib",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("Resources/eff_large_wordlist.txt")]
        ),
        .target(
            name: "CofferStateMachines",
            dependencies: [
                "CofferSync", "CofferWallet", "CofferCrypto",
            ]
        ),
        .target(
            name: "CofferSettings",
            dependencies: [
                "CofferSync", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CofferDatabase",
            dependencies: [
                "CofferSync",
                "CofferSettings", "CofferFileModes", "CofferSQLite", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CofferMediaCache",
            dependencies: [
                "CofferSync", "CofferCrypto", "CofferSecureStorage",
                "CofferFileModes", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "CofferSecureStorage",
            dependencies: [
                "CofferSync", "CofferCrypto", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "Coffer",
            dependencies: [
                "CofferSync",
                "CofferWallet", "CofferStateMachines", "CofferDeniable", "CofferSettings", "CofferDatabase", "CofferCrypto",
                "CofferMediaCache", "CofferSecureStorage", "CofferFileModes", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Development code, in no library product: the development CoverDrop service, the CoverDrop
        // vector checker and the seeded generator, for the `coffer` executable, its benchmarks and the tests.
        .target(name: "CofferDevelopment", dependencies: ["CofferSync", "CofferCrypto", "CofferDeniable"]),
        // What the `coffer` executable and its benchmarks share (stderr output); in no product.
        .target(name: "CofferCLISupport", dependencies: ["CofferSync"]),
        // `coffer bench …`: the benchmarks, a library the executable registers; in no product.
        .target(
            name: "CofferBench",
            dependencies: [
                "Coffer",
                "CofferSync",
                "CofferCLISupport",
                "CofferDevelopment",
                // libsodium's C calls, the baseline `coffer bench sdk` compares wallet-held keys with.
                "CSodium",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "coffer",
            dependencies: [
                "CofferSync",
                "Coffer",
                "CofferBench",
                "CofferCLISupport",
                "CofferDevelopment",
                "CofferFileModes",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What the test targets share: bounded waits (an awaited event that never comes fails its test),
        // temporary folders removed when the test process exits, and one way to run a child process.
        .target(name: "CofferTestSupport", dependencies: ["CofferSync"], path: "Tests/CofferTestSupport"),
        .testTarget(name: "CofferCryptoTests", dependencies: ["CofferCrypto", "CofferTestSupport"]),
        // An app's view: only `import Coffer` (and the shared test helpers), from a main-actor view model.
        .testTarget(name: "CofferAPITests", dependencies: ["Coffer", "CofferTestSupport"]),
        .testTarget(
            name: "CofferMediaCacheTests",
            dependencies: ["CofferMediaCache", "CofferSync", "CofferSecureStorage", "CofferDevelopment", "CofferTestSupport"]),
        .testTarget(name: "CofferSecureStorageTests", dependencies: ["CofferSecureStorage", "CofferTestSupport"]),
        .testTarget(
            name: "CofferContainerTests", dependencies: ["Coffer", "CofferTestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(
            name: "CofferAppDataTests",
            dependencies: [
                "CofferSettings", "CofferDatabase", "CofferSQLite", "CofferTestSupport", .product(name: "GRDB", package: "GRDB.swift"),
            ],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "CofferStateMachinesTests",
            dependencies: ["CofferStateMachines", "CofferWallet", "CofferCrypto", "CofferTestSupport"],
            // Version-1 machine JSON (Coffer's earlier state numbers), read by the conversion tests.
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "CofferDeniableTests",
            dependencies: [
                "CofferDeniable", "CofferDevelopment", "CofferCrypto", "CofferSync", "CofferTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // CoverDrop's published test vectors and integration data (Apache-2.0; see NOTICE).
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "CofferCLITests",
            dependencies: [
                "coffer", "CofferWallet", "CofferDatabase", "CofferSettings", "CofferDeniable", "CofferDevelopment", "CofferSync",
                "CofferSecureStorage",
                "CofferTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        .testTarget(
            name: "CofferWalletTests",
            dependencies: [
                "CofferWallet", "CofferSync", "CofferCrypto", "CofferSQLite", "CofferTestSupport", "CofferDevelopment",
                "CofferStateMachines", .product(name: "GRDB", package: "GRDB.swift"),
            ],
            resources: [.copy("Fixtures")]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// A file uses members only of modules it imports itself (SE-0444): `import Coffer` alone no longer
// reaches GRDB's or Foundation's members through Coffer's own imports.
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("MemberImportVisibility")]
}
