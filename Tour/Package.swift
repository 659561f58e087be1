// swift-tools-version: 6.1
import PackageDescription

// The tour: the classic OperationQueue tutorial as ten chapters, run against real parts
// (an HTTP server, URLSession, PNG files). A package of its own so that a package depending
// on the library never fetches or compiles it. From the repository root:
// `swift run --package-path Tour operations-demo`, `swift test --package-path Tour`.
let package = Package(
    name: "swift-operations-tour",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .executable(name: "operations-demo", targets: ["operations-demo"]),
    ],
    // `--traits PostgreSQL`: the durable chapter can run on a PostgreSQL database
    // (`--postgres URL`). Off by default: postgres-nio and its TLS stack add minutes to a
    // fresh build.
    traits: [.trait(name: "PostgreSQL", description: "The durable chapter on PostgreSQL (--postgres URL).")],
    dependencies: [
        // The durable chapter's stores, and the dashboard that shows them.
        .package(
            name: "swift-operations", path: "..",
            traits: ["SQLite", "Dashboard", .trait(name: "PostgreSQL", condition: .when(traits: ["PostgreSQL"]))]),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swhitty/FlyingFox", from: "0.27.1"),
    ],
    targets: [
        // zlib, for the tour's own PNG codec (zlib1g-dev is among the toolchain's prerequisites).
        .systemLibrary(name: "CZlib"),
        // The chapters live in a library so that tests can run them.
        .target(
            name: "OperationsTour",
            dependencies: [
                .product(name: "Operations", package: "swift-operations"),
                .product(name: "OperationsComposition", package: "swift-operations"),
                .product(name: "OperationsRecording", package: "swift-operations"),
                .product(name: "OperationsDurable", package: "swift-operations"),
                .product(name: "OperationsSQLite", package: "swift-operations"),
                .product(name: "OperationsDashboard", package: "swift-operations"),
                .product(name: "OperationsPostgres", package: "swift-operations", condition: .when(traits: ["PostgreSQL"])),
                "CZlib",
                .product(name: "FlyingFox", package: "FlyingFox"),
            ]),
        .executableTarget(
            name: "operations-demo",
            dependencies: ["OperationsTour", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // Depends on the executable so that `swift test` builds it: the durable chapter's test
        // starts it as a worker process.
        .testTarget(
            name: "OperationsTourTests", dependencies: ["OperationsTour", "operations-demo"],
            // A PNG written by libpng (its rows use every filter but "none"), to check the
            // tour's decoder against another encoder.
            resources: [.copy("Resources/libpng-rgba-filters.png")]),
    ],
    swiftLanguageModes: [.v6]
)
