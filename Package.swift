// swift-tools-version: 6.1
import PackageDescription

// The library and its tests, nothing else: a package that depends on `Operations` resolves
// and compiles only this. The tour (`Tour/`) and the benchmark (`Benchmarks/`) are packages
// of their own that depend on this one by path.
let package = Package(
    name: "swift-operations",
    // Synchronization.Mutex/Atomic need these minimums on Apple platforms.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Operations", targets: ["Operations"]),
        // For XCTest files: one import instead of XCTest + Operations + scoped imports.
        .library(name: "OperationsXCTest", targets: ["OperationsXCTest"]),
        // Recordings of queues: HTML timelines, Perfetto traces, dependency graphs.
        .library(name: "OperationsRecording", targets: ["OperationsRecording"]),
    ],
    dependencies: [
        // A plugin only (`swift package generate-documentation`): no target links it, so a
        // package that depends on this one does not fetch it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(name: "Operations"),
        .target(name: "OperationsXCTest", dependencies: ["Operations"]),
        .target(name: "OperationsRecording", dependencies: ["Operations"]),
        .testTarget(name: "OperationsTests", dependencies: ["Operations"]),
        .testTarget(name: "OperationsXCTestTests", dependencies: ["OperationsXCTest"]),
        .testTarget(name: "OperationsRecordingTests", dependencies: ["OperationsRecording"]),
    ],
    swiftLanguageModes: [.v6]
)
