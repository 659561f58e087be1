// swift-tools-version: 6.1
import PackageDescription

// The library, its recorder and its adapters, with their tests: a package that depends on
// `Operations` compiles only that target (SwiftPM resolves dependencies by target; see the
// README for what it fetches). The tour (`Tour/`) and the benchmark (`Benchmarks/`) are packages
// of their own that depend on this one by path.
let package = Package(
    name: "swift-operations",
    // Synchronization.Mutex/Atomic need these minimums on Apple platforms.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Operations", targets: ["Operations"]),
        // Groups, conditions, observers, exclusivity, retry, repeat, delay, timeouts, keys:
        // a module of its own, so that `import Operations` declares no name that frameworks
        // built on Operation declare themselves.
        .library(name: "OperationsComposition", targets: ["OperationsComposition"]),
        // For XCTest files: one import instead of XCTest + Operations + scoped imports.
        .library(name: "OperationsXCTest", targets: ["OperationsXCTest"]),
        // Recordings of queues: HTML timelines, Perfetto traces, dependency graphs.
        .library(name: "OperationsRecording", targets: ["OperationsRecording"]),
        // Adapters to the server ecosystem, each its own product: a package that uses only
        // `Operations` (or `OperationsRecording`) does not compile their packages (SwiftPM
        // still fetches them). With the `Durable` trait they also observe durable workers
        // and queues; without it they neither compile nor fetch the durable layer.
        .library(name: "OperationsTracing", targets: ["OperationsTracing"]),
        .library(name: "OperationsMetrics", targets: ["OperationsMetrics"]),
        .library(name: "OperationsLogging", targets: ["OperationsLogging"]),
        // For test targets: a manual clock, a gate, awaiting an outcome with a limit.
        .library(name: "OperationsTestSupport", targets: ["OperationsTestSupport"]),
        // Durable operations, behind package traits (see `traits` below): the store-agnostic
        // layer (queues, handles, workers), the PostgreSQL store, and the embedded SQLite
        // store (one file, several processes on one machine, nothing to install).
        .library(name: "OperationsDurable", targets: ["OperationsDurable"]),
        .library(name: "OperationsPostgres", targets: ["OperationsPostgres"]),
        .library(name: "OperationsSQLite", targets: ["OperationsSQLite"]),
        // A web page over durable queues and in-process queues, served from a process the
        // user runs (a `Service`), and a command that serves it for a store.
        .library(name: "OperationsDashboard", targets: ["OperationsDashboard"]),
        .executable(name: "operations-dashboard", targets: ["OperationsDashboardTool"]),
    ],
    // A package that does not enable them neither fetches nor compiles the durable layer's
    // packages (postgres-nio and its graph, sqlite-nio, swift-service-lifecycle): a
    // dependency used only under a disabled trait is left out of resolution. Enable one with
    // `.package(url: …, branch: "main", traits: ["SQLite"])`.
    traits: [
        .trait(name: "Durable", description: "OperationsDurable: durable queues, handles and workers (swift-service-lifecycle)."),
        .trait(name: "PostgreSQL", description: "OperationsPostgres: the PostgreSQL store (postgres-nio).", enabledTraits: ["Durable"]),
        .trait(name: "SQLite", description: "OperationsSQLite: the embedded SQLite store (sqlite-nio).", enabledTraits: ["Durable"]),
        .trait(
            name: "Dashboard",
            description: "OperationsDashboard and operations-dashboard: the web page (FlyingFox). Add SQLite or PostgreSQL for the stores it shows.",
            enabledTraits: ["Durable"]),
        .default(enabledTraits: []),
    ],
    dependencies: [
        // A plugin only (`swift package generate-documentation`): no target links it, so a
        // package that depends on this one does not fetch it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // For the adapters only. (`ServiceContext` comes with swift-distributed-tracing 1.7,
        // whose `Tracing` re-exports it.)
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // For the durable layer only (behind its traits).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // The PostgreSQL store's TLS settings (postgres-nio's own dependency).
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // For the SQLite store only: it bundles SQLite's amalgamation, so nothing is installed.
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
        // For the dashboard only: a small HTTP and WebSocket server without further packages.
        .package(url: "https://github.com/swhitty/FlyingFox", from: "0.27.1"),
        // For the dashboard's browser tests only: the DevTools connection to Chromium.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // The Swift runtime's swift_tryRetain, called with the C calling convention it has.
        .target(name: "COperationsRuntime"),
        .target(name: "Operations", dependencies: ["COperationsRuntime"]),
        .target(name: "OperationsComposition", dependencies: ["Operations"]),
        .target(name: "OperationsXCTest", dependencies: ["Operations"]),
        .target(name: "OperationsTestSupport", dependencies: ["Operations"]),
        .target(name: "OperationsRecording", dependencies: ["Operations", "OperationsComposition"]),
        .target(
            name: "OperationsTracing",
            dependencies: [
                "Operations", .product(name: "Tracing", package: "swift-distributed-tracing"),
                .target(name: "OperationsDurable", condition: .when(traits: ["Durable"])),
            ]),
        .target(
            name: "OperationsMetrics",
            dependencies: [
                "Operations", .product(name: "CoreMetrics", package: "swift-metrics"),
                .target(name: "OperationsDurable", condition: .when(traits: ["Durable"])),
            ]),
        .target(
            name: "OperationsLogging",
            dependencies: [
                "Operations", .product(name: "Logging", package: "swift-log"),
                .target(name: "OperationsDurable", condition: .when(traits: ["Durable"])),
            ]),
        .target(
            name: "OperationsDurable",
            dependencies: [
                "Operations", "OperationsComposition",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Durable"])),
            ]),
        .target(
            name: "OperationsPostgres",
            dependencies: [
                "Operations", "OperationsDurable", .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .target(
            name: "OperationsSQLite",
            dependencies: [
                "Operations", "OperationsDurable", .product(name: "SQLiteNIO", package: "sqlite-nio", condition: .when(traits: ["SQLite"])),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The kinds of work the durable tests run (with a recorder of their events), and a
        // worker process that runs them.
        .target(
            name: "OperationsDashboard",
            dependencies: [
                "Operations", "OperationsDurable",
                .product(name: "FlyingFox", package: "FlyingFox", condition: .when(traits: ["Dashboard"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Dashboard"])),
            ]),
        .executableTarget(
            name: "OperationsDashboardTool",
            dependencies: ["OperationsDashboard", "OperationsDurable", "OperationsPostgres", "OperationsSQLite"]),
        // A headless Chromium driven over the DevTools protocol, for the dashboard's page tests.
        .target(
            name: "BrowserDriver",
            dependencies: [
                "Operations",
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Dashboard"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["Dashboard"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Dashboard"])),
                .product(name: "NIOWebSocket", package: "swift-nio", condition: .when(traits: ["Dashboard"])),
            ],
            path: "Tests/BrowserDriver"),
        .target(name: "DurableTestKinds", dependencies: ["Operations", "OperationsDurable"], path: "Tests/DurableTestKinds"),
        .executableTarget(
            name: "DurableTestWorker",
            dependencies: [
                "Operations", "DurableTestKinds", "OperationsPostgres", "OperationsSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Durable"])),
            ],
            path: "Tests/DurableTestWorker"),
        // The differential test: programs over the Foundation-shaped API, generated from a seed
        // (`DifferentialPrograms`), run by one interpreter compiled twice — against Linux's
        // Foundation and against `Operations` — whose transcripts the test compares. The
        // interpreter's sources live in `Tests/DifferentialInterpreter/` and are linked into
        // both executables' folders; each executable adds a shim naming the classes it tests.
        .target(name: "DifferentialPrograms", path: "Tests/DifferentialPrograms"),
        .executableTarget(
            name: "DifferentialOnFoundation", dependencies: ["DifferentialPrograms"],
            path: "Tests/DifferentialOnFoundation"),
        .executableTarget(
            name: "DifferentialOnOperations", dependencies: ["DifferentialPrograms", "Operations"],
            path: "Tests/DifferentialOnOperations"),
        // Traits the test targets share (one process runs them all).
        .target(name: "TestTraits", dependencies: ["Operations"], path: "Tests/TestTraits"),
        // The helpers the test targets share: bounded waits, values shared between threads,
        // the tutorials' operations, observers, readers of exit tests, logs and recordings.
        .target(
            name: "OperationsTestHelpers",
            dependencies: [
                "Operations", "OperationsRecording", "OperationsTestSupport", "DifferentialPrograms",
                .product(name: "Logging", package: "swift-log"), .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            path: "Tests/TestHelpers"),
        .testTarget(
            name: "OperationsTests",
            dependencies: ["Operations", "OperationsComposition", "OperationsTestSupport", "OperationsTestHelpers", "TestTraits"]),
        .testTarget(name: "OperationsXCTestTests", dependencies: ["OperationsXCTest"]),
        // A framework that declares composition names of its own, and a client that uses them
        // beside `import Operations` (the names must not be ambiguous).
        .target(name: "FrameworkOnOperations", dependencies: ["Operations"], path: "Tests/Fixtures/FrameworkOnOperations"),
        .testTarget(name: "FrameworkClientTests", dependencies: ["FrameworkOnOperations", "Operations"]),
        .testTarget(name: "OperationsRecordingTests", dependencies: ["OperationsRecording", "OperationsTestHelpers"]),
        .testTarget(
            name: "OperationsTracingTests",
            dependencies: [
                "OperationsTracing", .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                // The durable parts of the adapters' tests run a worker on an SQLite store.
                .target(name: "OperationsDurable", condition: .when(traits: ["Durable"])),
                .target(name: "OperationsSQLite", condition: .when(traits: ["SQLite"])),
                .target(name: "DurableTestKinds", condition: .when(traits: ["Durable"])),
            ]),
        .testTarget(
            name: "OperationsMetricsTests",
            dependencies: [
                "OperationsMetrics", .product(name: "MetricsTestKit", package: "swift-metrics"),
                // The durable parts of the adapters' tests run a worker on an SQLite store.
                .target(name: "OperationsDurable", condition: .when(traits: ["Durable"])),
                .target(name: "OperationsSQLite", condition: .when(traits: ["SQLite"])),
                .target(name: "DurableTestKinds", condition: .when(traits: ["Durable"])),
            ]),
        .testTarget(
            name: "OperationsLoggingTests",
            dependencies: [
                "OperationsLogging", .product(name: "InMemoryLogging", package: "swift-log"), "OperationsTestHelpers", "TestTraits",
                // The durable parts of the adapters' tests run a worker on an SQLite store.
                .target(name: "OperationsDurable", condition: .when(traits: ["Durable"])),
                .target(name: "OperationsSQLite", condition: .when(traits: ["SQLite"])),
                .target(name: "DurableTestKinds", condition: .when(traits: ["Durable"])),
            ]),
        // Depends on the worker executable so that `swift test` builds it beside the tests.
        .testTarget(
            name: "OperationsDurableTests",
            dependencies: [
                "Operations", "OperationsDurable", "OperationsPostgres", "OperationsSQLite", "DurableTestKinds", "DurableTestWorker",
                "OperationsTestHelpers", "TestTraits", .product(name: "Logging", package: "swift-log"),
                .target(name: "OperationsDashboard", condition: .when(traits: ["Dashboard"])),
                .target(name: "BrowserDriver", condition: .when(traits: ["Dashboard"])),
                .product(name: "SQLiteNIO", package: "sqlite-nio", condition: .when(traits: ["SQLite"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
            ]),
        // Depends on the executables only so that `swift test` builds them beside the tests.
        .testTarget(
            name: "DifferentialTests",
            dependencies: ["DifferentialPrograms", "DifferentialOnFoundation", "DifferentialOnOperations"]),
        // The Swift blocks of the README and the DocC articles, compiled, and a test that they
        // match the documents.
        .testTarget(
            name: "DocumentationExamplesTests",
            dependencies: [
                "Operations", "OperationsComposition", "OperationsRecording", "OperationsTestSupport", "OperationsXCTest",
                "OperationsTracing", "OperationsMetrics", "OperationsLogging", .product(name: "Logging", package: "swift-log"),
                .target(name: "OperationsDurable", condition: .when(traits: ["Durable"])),
                .target(name: "OperationsPostgres", condition: .when(traits: ["PostgreSQL"])),
                .target(name: "OperationsSQLite", condition: .when(traits: ["SQLite"])),
                .target(name: "OperationsDashboard", condition: .when(traits: ["Dashboard"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["Durable"])),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
