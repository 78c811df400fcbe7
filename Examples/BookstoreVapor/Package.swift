// swift-tools-version:6.1
import PackageDescription

// The book store as a Vapor app on StructPostgres. A package of its own (like BookstoreServer and Benchmarks/), so
// that users of the library never build Vapor or Fluent. Fluent is here only for the guide "Coming from Fluent":
// its Fluent snippets are type-checked against these modules, and a test runs Fluent and StructPostgres on one
// database, as an app moving over does.
let package = Package(
    name: "BookstoreVapor",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "StructPostgres", path: "../.."),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
        .package(url: "https://github.com/vapor/fluent", exact: "4.13.0"),
        .package(url: "https://github.com/vapor/fluent-postgres-driver", exact: "2.14.0"),
    ],
    targets: [
        .target(
            name: "StructPostgresVapor",
            dependencies: [
                .product(name: "StructPostgres", package: "StructPostgres"),
                .product(name: "Vapor", package: "vapor"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .executableTarget(
            name: "BookstoreVapor",
            dependencies: [
                "StructPostgresVapor",
                .product(name: "StructPostgres", package: "StructPostgres"),
                .product(name: "StructPostgresCommands", package: "StructPostgres"),
                .product(name: "BookstoreModels", package: "StructPostgres"),
                .product(name: "Vapor", package: "vapor"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
        .testTarget(
            name: "BookstoreVaporTests",
            dependencies: [
                "BookstoreVapor",
                "StructPostgresVapor",
                .product(name: "StructPostgresTesting", package: "StructPostgres"),
                .product(name: "VaporTesting", package: "vapor"),
                .product(name: "Fluent", package: "fluent"),
                .product(name: "FluentPostgresDriver", package: "fluent-postgres-driver"),
            ],
            swiftSettings: [.enableUpcomingFeature("ExistentialAny")]
        ),
    ]
)
