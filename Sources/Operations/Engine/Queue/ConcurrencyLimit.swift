/// The bound on a queue's executing operations, converted once from the value
/// `maxConcurrentOperationCount` was set to.
enum ConcurrencyLimit: Equatable {
    /// `defaultMaxConcurrentOperationCount` (−1): as many as the system sees fit. Workers
    /// start for about one operation per processor, and the watchdog adds workers while
    /// the running ones are blocked.
    case systemDefault
    /// At most this many at once (0: none starts).
    case exactly(Int)

    /// The limit a count stands for; nil for a count below −1 (a programmer error, which
    /// the caller reports).
    init?(maxConcurrentOperationCount count: Int) {
        switch count {
        case -1: self = .systemDefault
        case 0...: self = .exactly(count)
        default: return nil
        }
    }

    /// What `maxConcurrentOperationCount` reads.
    var maxConcurrentOperationCount: Int {
        switch self {
        case .systemDefault: -1
        case .exactly(let count): count
        }
    }

    /// How many operations may execute at once.
    var executions: Int {
        switch self {
        case .systemDefault: Int.max
        case .exactly(let count): count
        }
    }

    /// The watchdog adds workers for blocked ones only under the default limit: with an
    /// explicit one, the limit is exact.
    var growsWhenBlocked: Bool { self == .systemDefault }

    /// One at a time: priorities then do not come from quality of service.
    var isSerial: Bool { self == .exactly(1) }
}
