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
    dependencies: [
        // Only the tour uses these; the Operations library depends on nothing.
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swhitty/FlyingFox", from: "0.27.1"),
    ],
    targets: [
        .target(name: "Operations"),

        // The tour: its chapters live in a library so that tests can run them.
        .systemLibrary(name: "CLibPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        .target(
            name: "OperationsTour",
            dependencies: ["Operations", "CLibPNG", .product(name: "FlyingFox", package: "FlyingFox")]),
        .executableTarget(
            name: "operations-demo",
            dependencies: ["OperationsTour", .product(name: "ArgumentParser", package: "swift-argument-parser")]),

        .executableTarget(name: "operations-benchmark", dependencies: ["Operations"]),

        .testTarget(name: "OperationsTests", dependencies: ["Operations"]),
        .testTarget(name: "OperationsTourTests", dependencies: ["OperationsTour"]),
    ],
    swiftLanguageModes: [.v6]
)
