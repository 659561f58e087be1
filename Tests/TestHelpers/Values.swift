import DifferentialPrograms

/// A name no other test uses (exclusivity categories are process-wide).
public func unique(_ name: String) -> String { "\(name)-\(UInt64.random(in: 0...UInt64.max))" }

/// An error a test throws, told apart by its code.
public struct TestError: Error, Equatable {
    public var code: Int

    public init(code: Int) { self.code = code }
}

/// A small seeded generator (SplitMix64): the same seed gives the same sequence, so that a
/// failing case can be rerun. The one the differential test's programs are generated with.
public typealias SplitMix64 = SeededGenerator
