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

    /// The parameters of a strategy made by `immediate`, `constant`, `exponential` or
    /// `fullJitter(base:maximum:)`: `min(maximum, initial × multiplier^(attempt − 1))`, times
    /// a random fraction when jittered. A store of durable operations keeps these instead of
    /// the function, and computes the wait after any attempt when it fails.
    package struct Backoff: Sendable {
        package var initial: Duration
        package var multiplier: Double
        package var maximum: Duration
        package var jittered: Bool
    }

    /// `nil` for a strategy given by a function.
    package let backoff: Backoff?

    /// A strategy given by a function from the attempt that failed (1 for the first) to
    /// the wait before the next one.
    public init(_ delay: @escaping @Sendable (_ attempt: Int) -> Duration) {
        delayAfter = delay
        backoff = nil
    }

    private init(_ backoff: Backoff) {
        self.backoff = backoff
        delayAfter = { attempt in
            let wait = Self._exponential(
                initial: backoff.initial, multiplier: backoff.multiplier, maximum: backoff.maximum, attempt: attempt)
            return backoff.jittered ? .seconds(wait._seconds * Double.random(in: 0...1)) : wait
        }
    }

    /// The wait after attempt number `attempt` (1 for the first) failed; never negative.
    public func delay(afterAttempt attempt: Int) -> Duration {
        max(.zero, delayAfter(attempt))
    }

    /// No wait.
    public static var immediate: RetryStrategy { .constant(.zero) }

    /// The same wait every time.
    public static func constant(_ delay: Duration) -> RetryStrategy {
        RetryStrategy(Backoff(initial: delay, multiplier: 1, maximum: delay, jittered: false))
    }

    /// `initial`, then multiplied by `multiplier` after every attempt, never more than
    /// `maximum`.
    public static func exponential(initial: Duration, multiplier: Double = 2, maximum: Duration) -> RetryStrategy {
        RetryStrategy(Backoff(initial: initial, multiplier: multiplier, maximum: maximum, jittered: false))
    }

    /// "Full jitter" (AWS's backoff advice): a random wait between zero and the exponential
    /// wait (`base` doubled per attempt, capped at `maximum`).
    public static func fullJitter(base: Duration, maximum: Duration) -> RetryStrategy {
        RetryStrategy(Backoff(initial: base, multiplier: 2, maximum: maximum, jittered: true))
    }

    /// "Full jitter" with your own random numbers: `random` returns a number in `0...1`; pass
    /// one to make the waits predictable in tests.
    /// - Note: A durable operation computes a strategy given a function when it is added, for
    ///   a bounded number of attempts (`DurableRetry`); without `random`, the store draws.
    public static func fullJitter(
        base: Duration, maximum: Duration, random: @escaping @Sendable () -> Double
    ) -> RetryStrategy {
        let ceiling = exponential(initial: base, maximum: maximum)
        return RetryStrategy { attempt in
            .seconds(ceiling.delay(afterAttempt: attempt)._seconds * min(1, max(0, random())))
        }
    }

    fileprivate static func _exponential(initial: Duration, multiplier: Double, maximum: Duration, attempt: Int) -> Duration {
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
