// swift-tools-version: 6.1
import PackageDescription

// The benchmark: Operations against Foundation's OperationQueue and raw Dispatch, in one
// process. A package of its own so that a package depending on the library never fetches
// or compiles it. From the repository root:
// `swift run -c release --package-path Benchmarks operations-benchmark`.
let package = Package(
    name: "swift-operations-benchmarks",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .executable(name: "operations-benchmark", targets: ["operations-benchmark"]),
        // The durable layer on PostgreSQL and SQLite against a plain SKIP LOCKED loop.
        .executable(name: "durable-benchmark", targets: ["durable-benchmark"]),
    ],
    dependencies: [
        .package(name: "swift-operations", path: "..", traits: ["PostgreSQL", "SQLite", "Dashboard"]),
        // For the durable benchmark's own connections (baseline, setup).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // For filling an SQLite store in bulk and showing its query plans (`--only-dashboard`).
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
    ],
    targets: [
        // Counts allocations by interposing malloc & co. in the benchmark executable only.
        .target(name: "AllocationCounter"),
        .executableTarget(
            name: "operations-benchmark",
            dependencies: [
                .product(name: "Operations", package: "swift-operations"),
                .product(name: "OperationsComposition", package: "swift-operations"),
                "AllocationCounter",
            ]),
        .executableTarget(
            name: "durable-benchmark",
            dependencies: [
                .product(name: "OperationsDurable", package: "swift-operations"),
                .product(name: "OperationsPostgres", package: "swift-operations"),
                .product(name: "OperationsSQLite", package: "swift-operations"),
                .product(name: "OperationsDashboard", package: "swift-operations"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
