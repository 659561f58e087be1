// How many times a durable operation is tried, and how long it waits between tries.
#if Durable

import OperationsComposition

/// The in-process `RetryStrategy` plus a maximum number of attempts.
///
/// The waits are computed when the operation is added and stored with it (a strategy is a
/// function, which a database cannot hold): a random strategy draws its waits then.
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

    /// The stored waits, in seconds: element `i` after attempt `i + 1` failed.
    var delaysInSeconds: [Double] {
        guard maximumAttempts > 1 else { return [] }
        return (1..<maximumAttempts).map { attempt in
            let components = strategy.delay(afterAttempt: attempt).components
            return Double(components.seconds) + Double(components.attoseconds) * 1e-18
        }
    }
}
#endif
