import Operations

/// Runs `body` on a thread of its own. What a test starts on another thread and then waits
/// for runs here, never on Dispatch's global queues or Swift's cooperative pool: those
/// pools have about one thread per processor and grow slowly (or not at all) while their
/// threads block, so on a small, loaded machine a test blocked in one of them could wait
/// for work queued behind it. `group`, when given, is entered now and left when `body`
/// returns.
public func onNewThread(group: DispatchGroup? = nil, _ body: @escaping @Sendable () -> Void) {
    group?.enter()
    let thread = Thread {
        body()
        group?.leave()
    }
    thread.stackSize = 8 << 20
    thread.start()
}

/// Runs `body` on a thread of its own and returns its result (or throws its error).
///
/// For a test that blocks for long, or computes for long: on one of the threads that run
/// Swift's tasks it would hold that thread, and those pools have about one thread per
/// processor. Two such tests at once on a two-processor machine (a long chain's release and
/// a scan of the sources take a minute each under Thread Sanitizer) would leave no thread
/// for any other test's tasks until one of them ended.
public func onOwnThread<T: Sendable, Failure: Error>(
    _ body: @escaping @Sendable () throws(Failure) -> T
) async throws(Failure) -> T {
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, Failure>, Never>) in
        onNewThread {
            do throws(Failure) {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    return try result.get()
}

/// A signal a blocked thread waits for, with a timeout: each `open()` lets one `wait()`
/// through (a semaphore). For tasks, `TestGate` of `OperationsTestSupport` suspends instead
/// of blocking, and stays open once opened.
public final class BlockingSignal: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    public init() {}

    /// Lets `count` waits through.
    public func open(_ count: Int = 1) {
        for _ in 0..<count { semaphore.signal() }
    }

    /// True when opened before the timeout.
    @discardableResult
    public func wait(timeout: TimeInterval = eventTimeout) -> Bool {
        semaphore.wait(timeout: .now() + timeout) == .success
    }
}

/// Arrivals that wait until `count` parties have arrived: proves that `count` pieces of
/// work run at the same time (it times out if they cannot).
public final class Rendezvous: Sendable {
    private let arrived = Shared(0)
    private let everyone = BlockingSignal()
    public let count: Int

    public init(count: Int) { self.count = count }

    /// Arrives and waits for the others; false on timeout.
    @discardableResult
    public func arriveAndWait(timeout: TimeInterval = eventTimeout) -> Bool {
        if arrived.increment() == count { everyone.open(count) }
        return everyone.wait(timeout: timeout)
    }
}

/// Tracks how many pieces of work run at once, and the most seen.
public final class ConcurrencyMeter: Sendable {
    private let state = Shared((now: 0, most: 0))

    public init() {}

    public func enter() { state.update { $0.now += 1; $0.most = max($0.most, $0.now) } }
    public func leave() { state.update { $0.now -= 1 } }
    public var most: Int { state().most }
    public var now: Int { state().now }
}

/// Adds an empty operation to `queue` from a thread of its own while a hook or handler of
/// the queue holds that add inside its call: once the hook opened `entered`, runs
/// `meanwhile`, then opens `release` and waits until the add returned. Returns whether the
/// hook was entered and whether the add returned, each before the timeout.
public func addWhileHeld(
    to queue: OperationQueue, entered: BlockingSignal, release: BlockingSignal, meanwhile: () -> Void
) -> (entered: Bool, added: Bool) {
    let added = BlockingSignal()
    onNewThread {
        queue.addOperation {}
        added.open()
    }
    guard entered.wait() else { return (false, false) }
    meanwhile()
    release.open()
    return (true, added.wait())
}
