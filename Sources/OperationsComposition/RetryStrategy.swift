// How long a retry waits between attempts.

import Operations

/// How long ``RetryOperation`` waits after a failed attempt before the next one.
///
/// ```swift
/// .exponential(initial: .milliseconds(100), maximum: .seconds(10))   // 0.1 s, 0.2 s, 0.4 s, …
/// .fullJitter(base: .milliseconds(100), maximum: .seconds(10))       // random, up to those
/// ```
public struct RetryStrategy: Sendable {
    private let delayAfter: @Sendable (Int) -> Duration

    /// A strategy given by a function from the attempt that failed (1 for the first) to
    /// the wait before the next one.
    public init(_ delay: @escaping @Sendable (_ attempt: Int) -> Duration) {
        delayAfter = delay
    }

    /// The wait after attempt number `attempt` (1 for the first) failed; never negative.
    public func delay(afterAttempt attempt: Int) -> Duration {
        max(.zero, delayAfter(attempt))
    }

    /// No wait.
    public static var immediate: RetryStrategy { RetryStrategy { _ in .zero } }

    /// The same wait every time.
    public static func constant(_ delay: Duration) -> RetryStrategy { RetryStrategy { _ in delay } }

    /// `initial`, then multiplied by `multiplier` after every attempt, never more than
    /// `maximum`.
    public static func exponential(initial: Duration, multiplier: Double = 2, maximum: Duration) -> RetryStrategy {
        RetryStrategy { attempt in
            _exponential(initial: initial, multiplier: multiplier, maximum: maximum, attempt: attempt)
        }
    }

    /// "Full jitter" (AWS's backoff advice): a random wait between zero and the exponential
    /// wait (`base` doubled per attempt, capped at `maximum`). `random` returns a number in
    /// `0...1`; pass your own to make the waits predictable in tests.
    public static func fullJitter(
        base: Duration, maximum: Duration,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
    ) -> RetryStrategy {
        RetryStrategy { attempt in
            let ceiling = _exponential(initial: base, multiplier: 2, maximum: maximum, attempt: attempt)
            let fraction = min(1, max(0, random()))
            return .seconds(ceiling._seconds * fraction)
        }
    }

    private static func _exponential(initial: Duration, multiplier: Double, maximum: Duration, attempt: Int) -> Duration {
        // In seconds as a Double, capped before converting back: no overflow for large attempts.
        let exponent = Double(max(0, attempt - 1))
        let seconds = min(maximum._seconds, initial._seconds * pow(multiplier, exponent))
        return .seconds(seconds)
    }
}

extension Duration {
    /// The duration in seconds.
    var _seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
