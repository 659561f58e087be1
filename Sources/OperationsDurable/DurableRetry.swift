// How many times a durable operation is tried, and how long it waits between tries.
#if Durable

import Foundation
import OperationsComposition

/// The in-process `RetryStrategy` plus a maximum number of attempts.
///
/// What is stored with the operation does not grow with the maximum: `.max` retries until
/// the body succeeds. The strategies `.immediate`, `.constant`, `.exponential` and
/// `.fullJitter(base:maximum:)` are stored as their parameters, and the store computes the
/// wait after a failure when it happens (a jittered one draws its fraction then). A strategy
/// given by a closure (also `fullJitter` with your own `random`) cannot be stored: its waits
/// are computed when the operation is added, for at most ``listedRetryLimit`` retries.
public struct DurableRetry: Sendable {
    public var strategy: RetryStrategy
    public var maximumAttempts: Int

    public init(_ strategy: RetryStrategy = .immediate, maximumAttempts: Int) {
        self.strategy = strategy
        self.maximumAttempts = maximumAttempts
    }

    /// The default: three attempts, 1 s then 2 s apart. A worker that dies mid-run costs
    /// an attempt too.
    public static var standard: DurableRetry {
        DurableRetry(.exponential(initial: .seconds(1), maximum: .seconds(60)), maximumAttempts: 3)
    }

    /// One attempt: a failure, or the death of its worker, is final.
    public static var never: DurableRetry { DurableRetry(maximumAttempts: 1) }

    /// How many waits of a strategy given by a closure are computed when the operation is
    /// added: a larger `maximumAttempts` with such a strategy is refused.
    public static let listedRetryLimit = 1_000

    /// The stored form: waits listed now (for a closure) and the formula for the rest.
    func stored(adding what: String) throws -> (listed: [Double], backoff: DurableBackoff) {
        if let shape = strategy.backoff {
            guard shape.multiplier.isFinite, shape.multiplier >= 0 else {
                throw DurableError(.invalidArgument, "\(what): the retry strategy's multiplier must be a finite number of at least 0, not \(shape.multiplier)")
            }
            let backoff = DurableBackoff(
                initial: DurableBackoff.clamped(shape.initial.seconds), multiplier: shape.multiplier,
                maximum: DurableBackoff.clamped(shape.maximum.seconds), jittered: shape.jittered)
            return ([], backoff)
        }
        let retries = maximumAttempts - 1
        guard retries <= Self.listedRetryLimit else {
            throw DurableError(
                .invalidArgument,
                "\(what): a retry strategy given by a closure is computed when the operation is added, for at most \(Self.listedRetryLimit) retries, not \(retries); use .immediate, .constant, .exponential or .fullJitter(base:maximum:), which the store computes when an attempt fails")
        }
        guard retries > 0 else { return ([], .none) }
        let listed = (1...retries).map { DurableBackoff.clamped(strategy.delay(afterAttempt: $0).seconds) }
        return (listed, .none)
    }
}

/// The waits between a durable operation's attempts as a store keeps them: waits listed when
/// it was added, then a formula the store evaluates when an attempt fails.
public struct DurableBackoff: Sendable, Equatable {
    /// The wait after the first failure past the listed ones, in seconds.
    public var initial: Double
    /// What each further failure multiplies the wait by.
    public var multiplier: Double
    /// The longest wait, in seconds.
    public var maximum: Double
    /// Whether the wait is a random fraction of the formula's, drawn when the attempt fails.
    public var jittered: Bool

    public init(initial: Double, multiplier: Double, maximum: Double, jittered: Bool) {
        self.initial = initial
        self.multiplier = multiplier
        self.maximum = maximum
        self.jittered = jittered
    }

    /// No wait.
    public static let none = DurableBackoff(initial: 0, multiplier: 1, maximum: 0, jittered: false)

    /// The longest wait a store schedules, in seconds (100 years): a database's dates end.
    public static let longestWait: Double = 100 * 365.25 * 86_400

    /// The wait, in seconds, after failure number `failure` (1 for the first): the listed
    /// wait while there is one, then `min(maximum, initial × multiplier^(failure − 1))`,
    /// times `fraction()` when jittered. It saturates: never negative, never more than
    /// ``longestWait``, and never traps, at any `failure`.
    public func seconds(afterFailure failure: Int, listed: [Double], fraction: () -> Double = { Double.random(in: 0...1) }) -> Double {
        if failure >= 1, failure <= listed.count { return Self.clamped(listed[failure - 1]) }
        guard initial > 0, maximum > 0 else { return 0 }
        // A Double overflows to infinity rather than trapping, and the minimum caps it.
        let grown = initial * pow(multiplier, Double(max(0, failure - 1)))
        var wait = min(maximum, grown.isNaN ? maximum : grown)
        if jittered { wait *= min(1, max(0, fraction())) }
        return Self.clamped(wait)
    }

    /// `seconds` within `0...longestWait` (not a number: 0).
    static func clamped(_ seconds: Double) -> Double {
        seconds.isNaN ? 0 : min(longestWait, max(0, seconds))
    }
}

extension Duration {
    /// The duration in seconds.
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
#endif
