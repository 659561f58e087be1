import Synchronization

/// The library's one lock: a value that can only be reached while its mutex is held.
///
/// Every piece of shared mutable state in `Operations` lives in a `Locked`. The rule that
/// goes with it: decide under the lock, act after it. User code (an operation's `main()`,
/// overridden getters, completion blocks, observers) never runs inside `withLock`.
/// `withLock` is not re-entrant.
struct Locked<Value: ~Copyable>: ~Copyable, Sendable {
    private let mutex: Mutex<Value>

    init(_ value: consuming sending Value) {
        mutex = Mutex(value)
    }

    @inline(__always)
    borrowing func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        try mutex.withLock(body)
    }
}
