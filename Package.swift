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
        // For test targets: a manual clock, a gate, awaiting an outcome with a limit.
        .library(name: "OperationsTestSupport", targets: ["OperationsTestSupport"]),
    ],
    dependencies: [
        // A plugin only (`swift package generate-documentation`): no target links it, so a
        // package that depends on this one does not fetch it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(name: "Operations"),
        .target(name: "OperationsXCTest", dependencies: ["Operations"]),
        .target(name: "OperationsTestSupport", dependencies: ["Operations"]),
        .testTarget(name: "OperationsTests", dependencies: ["Operations", "OperationsTestSupport"]),
        .testTarget(name: "OperationsXCTestTests", dependencies: ["OperationsXCTest"]),
    ],
    swiftLanguageModes: [.v6]
)
