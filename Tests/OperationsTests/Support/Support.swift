import Operations
import OperationsComposition
import Testing

/// How long a test waits for an event before it fails. Generous: the machine is small and
/// may be loaded (sanitizers, parallel tests); a correct run never comes near it.
let eventTimeout: TimeInterval = 20

/// Whether the suite runs under a sanitizer (CI sets `OPERATIONS_SANITIZED=1`): there, tests
/// whose size only makes them slow use a smaller one. Computed: a global `let` would cost
/// every read a lock under Thread Sanitizer.
var isSanitized: Bool { ProcessInfo.processInfo.environment["OPERATIONS_SANITIZED"] == "1" }

/// Runs `body` on a thread of its own. What a test starts on another thread and then waits
/// for runs here, never on Dispatch's global queues or Swift's cooperative pool: those
/// pools have about one thread per processor and grow slowly (or not at all) while their
/// threads block, so on a small, loaded machine a test blocked in one of them could wait
/// for work queued behind it. `group`, when given, is entered now and left when `body`
/// returns.
func onNewThread(group: DispatchGroup? = nil, _ body: @escaping @Sendable () -> Void) {
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
func onOwnThread<T: Sendable, Failure: Error>(
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

/// Adds an empty operation to `queue` from a thread of its own while a hook or handler of
/// the queue holds that add inside its call: once the hook opened `entered`, runs
/// `meanwhile`, then opens `release` and waits until the add returned. Returns whether the
/// hook was entered and whether the add returned, each before the timeout.
func addWhileHeld(
    to queue: OperationQueue, entered: Gate, release: Gate, meanwhile: () -> Void
) -> (entered: Bool, added: Bool) {
    let added = Gate()
    onNewThread {
        queue.addOperation {}
        added.open()
    }
    guard entered.wait() else { return (false, false) }
    meanwhile()
    release.open()
    return (true, added.wait())
}

/// A one-shot event a test can wait for, with a timeout.
final class Gate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    func open(_ count: Int = 1) {
        for _ in 0..<count { semaphore.signal() }
    }

    /// True when opened before the timeout.
    @discardableResult
    func wait(timeout: TimeInterval = eventTimeout) -> Bool {
        semaphore.wait(timeout: .now() + timeout) == .success
    }
}

/// A value shared between threads of a test.
/// - Note: `@unchecked Sendable`: every access goes through `lock`.
final class Shared<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func callAsFunction() -> Value { lock.withLock { value } }

    @discardableResult
    func update<R>(_ body: (inout Value) -> R) -> R { lock.withLock { body(&value) } }
}

extension Shared where Value == [String] {
    func append(_ element: String) { update { $0.append(element) } }
}

extension Shared where Value == Int {
    @discardableResult
    func increment() -> Int { update { $0 += 1; return $0 } }
}

/// Arrivals that wait until `count` parties have arrived: proves that `count` pieces of
/// work run at the same time (it times out if they cannot).
final class Rendezvous: Sendable {
    private let arrived = Shared(0)
    private let everyone = Gate()
    let count: Int

    init(count: Int) { self.count = count }

    /// Arrives and waits for the others; false on timeout.
    @discardableResult
    func arriveAndWait(timeout: TimeInterval = eventTimeout) -> Bool {
        if arrived.increment() == count { everyone.open(count) }
        return everyone.wait(timeout: timeout)
    }
}

/// Tracks how many pieces of work run at once, and the most seen.
final class ConcurrencyMeter: Sendable {
    private let state = Shared((now: 0, most: 0))
    func enter() { state.update { $0.now += 1; $0.most = max($0.most, $0.now) } }
    func leave() { state.update { $0.now -= 1 } }
    var most: Int { state().most }
    var now: Int { state().now }
}

/// Polls `condition` (for state that announces nothing) until it holds or the timeout passes.
/// A name no other test uses (exclusivity categories are process-wide).
func unique(_ name: String) -> String { "\(name)-\(UInt64.random(in: 0...UInt64.max))" }

func eventually(timeout: TimeInterval = eventTimeout, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        if Date() > deadline { return false }
        usleep(1_000)
    }
    return true
}

/// An operation whose `main()` calls a closure: the tutorials' synchronous subclass.
final class ClosureOperation: Operation, @unchecked Sendable {
    private let body: @Sendable (ClosureOperation) -> Void
    init(name: String? = nil, _ body: @escaping @Sendable (ClosureOperation) -> Void = { _ in }) {
        self.body = body
        super.init()
        self.name = name
    }
    override func main() { body(self) }
}

/// A small seeded generator (SplitMix64): the same seed gives the same sequence, so that a
/// failing case can be rerun.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// An observer that calls `body` with each change of the keys it observes.
final class CallbackObserver: NSObject, @unchecked Sendable {
    let body: @Sendable (String, [NSKeyValueChangeKey: Any]) -> Void

    init(_ body: @escaping @Sendable (String, [NSKeyValueChangeKey: Any]) -> Void) {
        self.body = body
    }

    override func observeValue(
        forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?,
        context: UnsafeMutableRawPointer?
    ) {
        body(keyPath ?? "", change ?? [:])
    }
}

extension [NSKeyValueChangeKey: Any] {
    var isPrior: Bool { self[.notificationIsPriorKey] as? Bool ?? false }
}

/// An operation whose body runs until it is cancelled, as one whose `cancel()` closes the
/// socket its body reads: `super.cancel()`, then the cleanup that ends the body, then
/// `afterCleanup` (once), where a test holds the cancelling call while the freed slot is
/// given to the next operation.
/// - Note: `@unchecked Sendable`: its own fields are `let`s of `Sendable` types.
final class CancelEndsBodyOperation: Operation, @unchecked Sendable {
    /// Opened when the body begins.
    let bodyStarted = Gate()
    private let closed = Gate()
    private let cleanedUp = Shared(false)
    private let afterCleanup: @Sendable () -> Void

    init(afterCleanup: @escaping @Sendable () -> Void) {
        self.afterCleanup = afterCleanup
        super.init()
    }

    override func main() {
        bodyStarted.open()
        _ = closed.wait()
    }

    override func cancel() {
        super.cancel()
        closed.open()
        let first = cleanedUp.update { done in
            defer { done = true }
            return !done
        }
        if first { afterCleanup() }
    }
}

/// A weak reference that can be filled in later and read from any thread.
final class WeakOperationBox: @unchecked Sendable {
    private let lock = NSLock()
    private weak var _operation: Operation?
    var operation: Operation? {
        get { lock.withLock { _operation } }
        set { lock.withLock { _operation = newValue } }
    }
}

extension Optional where Wrapped == ExitTest.Result {
    /// Records an issue, showing the child's standard error, unless it printed nothing.
    func expectQuietChild(sourceLocation: SourceLocation = #_sourceLocation) {
        guard let result = self else { return }
        let text = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(text.isEmpty, "child's standard error: \(text)", sourceLocation: sourceLocation)
    }
}

/// Takes a one-shot flag: true the first time only.
func takeOnce(_ flag: Shared<Bool>) -> Bool {
    flag.update { flag in
        defer { flag = false }
        return flag
    }
}
