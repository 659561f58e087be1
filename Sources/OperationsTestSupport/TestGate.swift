@_spi(Engine) import Operations

/// A gate that tasks await until a test opens it (at once if it is open): the way a test
/// holds an operation's body at a known point without sleeping.
///
/// ```swift
/// let gate = TestGate()
/// queue.addOperation { await gate.wait(); return 1 }
/// gate.open()
/// ```
public final class TestGate: Sendable {
    private struct State {
        var isOpen = false
        var nextID = 0
        var waiters: [Int: UnsafeContinuation<Void, Never>] = [:]
    }

    private let state = Locked(State())

    /// Creates a closed gate.
    public init() {}

    /// Whether the gate has been opened.
    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Opens the gate for good: every waiting task resumes, later waits return at once.
    public func open() {
        let waiters = state.withLock { state -> [UnsafeContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Suspends until the gate opens. A cancelled task stops waiting (and returns).
    public func wait() async {
        await wait(returningOnCancel: true)
    }

    /// Suspends until the gate opens, cancelled or not: how a test holds a body that must
    /// not notice its cancellation.
    public func waitIgnoringCancellation() async {
        await wait(returningOnCancel: false)
    }

    private func wait(returningOnCancel: Bool) async {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.isOpen || (returningOnCancel && Task.isCancelled) { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            guard returningOnCancel else { return }
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
