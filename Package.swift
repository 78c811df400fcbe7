// swift-tools-version:6.1
import PackageDescription

/// `STRUCTPG_THREAD_SANITIZER=1` (the last pass of `scripts/test.sh`): this package's own Swift code under the thread
/// sanitizer, its unit tests alone; the dependencies are those already built for the other passes, not compiled again.
let threadSanitizer = Context.environment["STRUCTPG_THREAD_SANITIZER"] == "1"

let swiftSettings: [SwiftSetting] =
    [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
    ] + (threadSanitizer ? [.unsafeFlags(["-sanitize=thread"]), .define("STRUCTPG_THREAD_SANITIZER")] : [])

let package = Package(
    name: "StructPostgres",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "StructPostgres", targets: ["StructPostgres"]),
        .library(name: "StructPostgresTesting", targets: ["StructPostgresTesting"]),
        .library(name: "StructPostgresCommands", targets: ["StructPostgresCommands"]),
        .executable(name: "structpg", targets: ["structpg"]),
        .executable(name: "Bookstore", targets: ["Bookstore"]),
        .library(name: "BookstoreModels", targets: ["BookstoreModels"]),
    ],
    dependencies: [
        // Up to the next minor release only: the library imports PostgresNIO's underscored `_ConnectionPoolModule`
        // and reads its connection's channel by reflection (CONTRIBUTING.md lists each workaround and its canary
        // test), which a minor release may change without notice.
        .package(url: "https://github.com/vapor/postgres-nio", .upToNextMinor(from: "1.33.2")),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    ],
    targets: [
        // Three modules, bottom first; each may use only those below it, which the compiler keeps (and
        // scripts/check-layers keeps the tiers inside each).
        // The configuration a user writes and the errors a user catches: public, re-exported by StructPostgres.
        .target(
            name: "StructPostgresCore",
            dependencies: [
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // The driver: connections, the pool and its state machines, sessions and their statements, the commit
        // watcher, the canceller, the listener connection, and every workaround of PostgresNIO. Its API is
        // `package`-level only; it is the one module that imports `_ConnectionPoolModule` or reads PostgresNIO's
        // internals.
        .target(
            name: "StructPostgresDriver",
            dependencies: [
                "StructPostgresCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // The library users import: entities, coding, filters, reads, writes, the operation path, observation,
        // the service and migrations, on the driver.
        .target(
            name: "StructPostgres",
            dependencies: [
                "StructPostgresCore", "StructPostgresDriver",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings,
            linkerSettings: threadSanitizer ? [.unsafeFlags(["-sanitize=thread"])] : []
        ),
        .target(
            name: "StructPostgresCommands",
            dependencies: [
                "StructPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "structpg",
            dependencies: ["StructPostgresCommands"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "StructPostgresTesting",
            dependencies: ["StructPostgres"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "BookstoreModels",
            dependencies: ["StructPostgres"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "Bookstore",
            dependencies: [
                "StructPostgres", "StructPostgresTesting", "StructPostgresCommands", "BookstoreModels",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "FirstProgram",
            dependencies: ["StructPostgres"],
            path: "Examples/FirstProgram",
            exclude: ["migrations"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "StructPostgresFaultProbe",
            dependencies: ["StructPostgres", .product(name: "PostgresNIO", package: "postgres-nio")],
            path: "Tests/FaultProbe",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "StructPostgresSoak",
            dependencies: ["StructPostgres", "StructPostgresTesting", "BookstoreModels"],
            path: "Tests/Soak",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StructPostgresTests",
            dependencies: [
                "StructPostgres", "StructPostgresCore", "StructPostgresDriver",
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
            ],
            resources: [.copy("Fixtures/migrations")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StructPostgresIntegrationTests",
            dependencies: [
                "StructPostgres", "StructPostgresCore", "StructPostgresDriver", "StructPostgresTesting", "Bookstore",
                "BookstoreModels",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)

if threadSanitizer {
    package.targets.removeAll {
        !["StructPostgresCore", "StructPostgresDriver", "StructPostgres", "StructPostgresTests"].contains($0.name)
    }
    package.products.removeAll { $0.name != "StructPostgres" }
}
