#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether a worker is blocked in an operation (sleeping, waiting for I/O or a lock) or
/// busy: how the watchdog tells a queue whose operations block from one whose operations
/// compute.
///
/// Only a worker inside an operation's `start()` can be blocked: a worker between
/// operations that sleeps waits for the engine (the queue's lock, taken by producers and
/// the other workers), and more workers would only wait there too.
///
/// On Linux, the state letter in `/proc/self/task/<tid>/stat` says whether the thread
/// sleeps: `R` runnable, `S` sleeping, `D` waiting for I/O. The thread is named by its
/// kernel id. Elsewhere (or without /proc) there is no state to read: a worker in an
/// operation counts as blocked, and the watchdog's "no operation finished" decides.
struct WorkerThreadProbe: Sendable {
    /// The worker, to ask whether it is in an operation. `unowned(unsafe)` (a probe is
    /// copied into a lock section on every iteration of its worker): read only while the
    /// probe is registered with its queue, under the queue's lock (a worker's context
    /// outlives its registration, which ends when the worker retires).
    private unowned(unsafe) let worker: WorkerContext
    #if os(Linux)
    /// The thread's kernel id (cheap to take when a worker starts; the file is read only
    /// when the watchdog samples); nil when it could not be read.
    private let threadID: pid_t?
    #endif

    #if os(Linux)
    /// This thread's kernel id, once looked up (stored as the pointer's bits).
    private static let threadIDs = ThreadLocalPointer()
    #endif

    /// The probe of `worker`, which runs on the calling thread.
    init(worker: WorkerContext) {
        self.worker = worker
        #if os(Linux)
        threadID = Self.currentThreadID()
        #endif
    }

    #if os(Linux)
    private static func currentThreadID() -> pid_t? {
        // Dispatch reuses its threads: the id is looked up once per thread.
        if let cached = threadIDs.value { return pid_t(Int(bitPattern: cached)) }
        // "/proc/thread-self" links to "<pid>/task/<tid>" (glibc's gettid() is not
        // imported on every toolchain).
        var link = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/thread-self", &link, link.count - 1)
        guard count > 0 else { return nil }
        let text = String(decoding: link[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let last = text.split(separator: "/").last, let threadID = pid_t(last), threadID > 0 else { return nil }
        threadIDs.set(UnsafeMutableRawPointer(bitPattern: Int(threadID)))
        return threadID
    }
    #endif

    /// Whether the worker is in an operation's `start()`. Only under the queue's lock, while
    /// the probe is registered.
    var isInOperation: Bool { worker.isInOperation }

    /// Whether the worker's thread sleeps now (asked of a worker that was in an operation;
    /// needs no lock). Without a state to read, it counts as sleeping.
    func isSleeping() -> Bool {
        #if os(Linux)
        guard let threadID else { return true }
        return Self.isSleeping(threadID) ?? true
        #else
        return true
        #endif
    }

    #if os(Linux)
    /// Whether the thread sleeps now; nil when it is gone (or cannot be read).
    private static func isSleeping(_ threadID: pid_t) -> Bool? {
        let descriptor = open("/proc/self/task/\(threadID)/stat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        // "<tid> (<name>) <state> …": the name may hold spaces and parentheses, so the
        // state is the first letter after the last ')'.
        guard let close = buffer[..<count].lastIndex(of: UInt8(ascii: ")")), close + 2 < count else { return nil }
        let state = buffer[close + 2]
        return state == UInt8(ascii: "S") || state == UInt8(ascii: "D")
    }
    #endif
}
