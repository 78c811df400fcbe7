// swift-tools-version:6.2
// The benchmark suite: StructPostgres against hand-written PostgresNIO and Fluent in one process
// against one throwaway server. Separate from the library's package so that users and CI never build it.
import PackageDescription

let package = Package(
    name: "StructPostgresBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "StructPostgres", path: ".."),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/vapor/fluent-kit", exact: "1.57.0"),
        .package(url: "https://github.com/vapor/fluent-postgres-driver", exact: "2.14.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", exact: "1.7.3"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        // Counts allocations per call when preloaded (`scripts/bench.sh --costs`): the Bench finds its counters by name.
        .package(url: "https://github.com/ordo-one/malloc-interposer", exact: "1.6.1"),
    ],
    targets: [
        .executableTarget(
            name: "Bench",
            dependencies: [
                .product(name: "StructPostgres", package: "StructPostgres"),
                .product(name: "StructPostgresTesting", package: "StructPostgres"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "FluentKit", package: "fluent-kit"),
                .product(name: "FluentPostgresDriver", package: "fluent-postgres-driver"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
