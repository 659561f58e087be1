/// A name no other test uses (exclusivity categories are process-wide).
public func unique(_ name: String) -> String { "\(name)-\(UInt64.random(in: 0...UInt64.max))" }

/// An error a test throws, told apart by its code.
public struct TestError: Error, Equatable {
    public var code: Int

    public init(code: Int) { self.code = code }
}

/// A small seeded generator (SplitMix64): the same seed gives the same sequence, so that a
/// failing case can be rerun.
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
