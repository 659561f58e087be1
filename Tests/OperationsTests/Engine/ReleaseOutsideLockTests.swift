import Operations
import OperationsComposition
import Testing

/// Releasing a closure can run user code (the deinit of what it captured). The library
/// releases the closures it replaces or removes after its locks, so that such a deinit may
/// use the same object again (under a lock, each of these would re-enter it and trap).
@Suite("Closures are released outside the library's locks")
struct ReleaseOutsideLockTests {
    /// Calls `body` when it dies.
    final class OnDeinit: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        deinit { body() }
    }

    @Test("replacing a completion block")
    func completionBlock() {
        let operation = Operation()
        let ran = Shared(false)
        do {
            let capture = OnDeinit { [operation] in
                _ = operation.completionBlock
                ran.update { $0 = true }
            }
            operation.completionBlock = { _ = capture }
        }
        operation.completionBlock = nil
        #expect(ran())
    }

    @Test("cancelling an event subscription")
    func eventHandler() {
        let queue = OperationQueue()
        let ran = Shared(false)
        let subscription: OperationEventSubscription
        do {
            let capture = OnDeinit { [queue] in
                queue.addEventHandler { _ in }.cancel()
                ran.update { $0 = true }
            }
            subscription = queue.addEventHandler { _ in _ = capture }
        }
        subscription.cancel()
        #expect(ran())
    }

    @Test("invalidating a key-path observation")
    func observation() {
        let operation = Operation()
        let ran = Shared(false)
        let token: NSKeyValueObservation
        do {
            let capture = OnDeinit { [operation] in
                operation.observe(\.isFinished) { _, _ in }.invalidate()
                ran.update { $0 = true }
            }
            token = operation.observe(\.isFinished) { _, _ in _ = capture }
        }
        token.invalidate()
        #expect(ran())
    }
}
