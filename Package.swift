// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "swift-operations",
    // Synchronization.Mutex/Atomic need these minimums on Apple platforms.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Operations", targets: ["Operations"]),
        .executable(name: "operations-demo", targets: ["operations-demo"]),
        .executable(name: "operations-benchmark", targets: ["operations-benchmark"]),
    ],
    targets: [
        .target(name: "Operations"),
        .executableTarget(name: "operations-demo", dependencies: ["Operations"]),
        .executableTarget(name: "operations-benchmark", dependencies: ["Operations"]),
        .testTarget(name: "OperationsTests", dependencies: ["Operations"]),
    ],
    swiftLanguageModes: [.v6]
)
