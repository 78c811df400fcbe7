// swift-tools-version:6.1
import PackageDescription

// The book store as a web service: Hummingbird on StructPostgres. A package of its own (like Benchmarks/), so that
// users of the library never build Hummingbird.
let package = Package(
    name: "BookstoreServer",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "StructPostgres", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .target(
            name: "BookstoreAPI",
            dependencies: [
                .product(name: "StructPostgres", package: "StructPostgres"),
                .product(name: "BookstoreModels", package: "StructPostgres"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .executableTarget(
            name: "BookstoreServer",
            dependencies: [
                "BookstoreAPI",
                .product(name: "StructPostgresTesting", package: "StructPostgres"),
                .product(name: "StructPostgresCommands", package: "StructPostgres"),
                .product(name: "BookstoreModels", package: "StructPostgres"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .testTarget(
            name: "BookstoreAPITests",
            dependencies: [
                "BookstoreAPI",
                .product(name: "StructPostgresTesting", package: "StructPostgres"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
