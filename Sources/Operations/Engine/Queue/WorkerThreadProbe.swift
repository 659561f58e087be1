#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether a worker is blocked (sleeping, waiting for I/O or for other threads) or busy:
/// how the watchdog tells a queue whose operations block from one whose operations compute.
///
/// A worker that waits for a lock is not blocked while its queue progresses: the thread
/// holding the lock runs (or waits for a processor) and will release it, and more workers
/// would only wait for the same lock. That is what workers do when producers and the other
/// workers keep their queue's lock busy (between operations or inside one: recording a
/// finish, releasing dependents), or `malloc`'s arena locks (a worker frees what a producer
/// allocated). When nothing finishes for long, the watchdog counts such a wait after all:
/// the holder may itself wait for an operation that needs a worker.
///
/// On Linux the kernel says it: the state letter in `/proc/self/task/<tid>/stat` (`R`
/// runnable, `S` sleeping, `D` waiting for I/O), and for a sleeping thread its system call
/// in `.../syscall`. A thread waiting to take a lock sleeps in `futex`: a Swift `Mutex` (the
/// library's locks) and Dispatch's locks with `FUTEX_LOCK_PI`, glibc's mutexes (`NSLock`,
/// `malloc`'s arenas) with `FUTEX_WAIT` on the value 2 ("locked, with waiters"). Semaphores,
/// conditions and sleeps look otherwise. Elsewhere, or without /proc, a worker inside an
/// operation's `start()` counts as blocked, and the watchdog's "no operation finished"
/// decides.
struct WorkerThreadProbe: Sendable {
    /// The worker, to ask whether it is in an operation. `unowned(unsafe)` (a probe is
    /// copied into a lock section on every iteration of its worker): read only while the
    /// probe is registered with its queue, under the queue's lock (a worker's context
    /// outlives its registration, which ends when the worker retires).
    private unowned(unsafe) let worker: WorkerContext
    #if os(Linux)
    /// The thread's kernel id (cheap to take when a worker starts; the files are read only
    /// when the watchdog samples); nil when it could not be read.
    private let threadID: pid_t?
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

    /// What the watchdog reads of a worker under the queue's lock, while the probe is
    /// registered; `state()` then needs no lock.
    var sample: Sample {
        #if os(Linux)
        Sample(threadID: threadID, isInOperation: worker.isInOperation)
        #else
        Sample(isInOperation: worker.isInOperation)
        #endif
    }

    /// What a worker's thread is doing, as far as the watchdog can tell.
    enum ThreadState {
        case busy
        /// Sleeping to take a lock.
        case waitingForLock
        /// Sleeping (or waiting for I/O) otherwise.
        case blocked
    }

    struct Sample: Sendable {
        #if os(Linux)
        let threadID: pid_t?
        #endif
        let isInOperation: Bool

        /// What the worker's thread does now (see `WorkerThreadProbe`).
        func state() -> ThreadState {
            #if os(Linux)
            guard let threadID else { return isInOperation ? .blocked : .busy }
            // A thread that cannot be read any more has ended: its worker retired.
            guard let state = WorkerThreadProbe.contents(of: "stat", thread: threadID),
                  WorkerThreadProbe.isSleeping(stat: state)
            else { return .busy }
            // Read a moment after the state: a thread that woke meanwhile reads "running"
            // or another call, and counts as the state said.
            guard let call = WorkerThreadProbe.contents(of: "syscall", thread: threadID) else { return .blocked }
            return WorkerThreadProbe.waitsForLock(syscall: call) ? .waitingForLock : .blocked
            #else
            return isInOperation ? .blocked : .busy
            #endif
        }
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

    /// The first bytes of `/proc/self/task/<threadID>/<file>`; nil when it cannot be read.
    static func contents(of file: String, thread threadID: pid_t) -> [UInt8]? {
        let descriptor = open("/proc/self/task/\(threadID)/\(file)", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return Array(buffer[..<count])
    }

    /// Whether a `stat` line says the thread sleeps (`S`) or waits for I/O (`D`).
    static func isSleeping(stat: [UInt8]) -> Bool {
        // "<tid> (<name>) <state> …": the name may hold spaces and parentheses, so the
        // state is the first letter after the last ')'.
        guard let close = stat.lastIndex(of: UInt8(ascii: ")")), close + 2 < stat.count else { return false }
        let state = stat[close + 2]
        return state == UInt8(ascii: "S") || state == UInt8(ascii: "D")
    }

    /// The `futex` system call's number on this architecture.
    private static var futexCall: Int? {
        #if arch(x86_64)
        return 202
        #elseif arch(arm64)
        return 98
        #else
        return nil
        #endif
    }

    /// Whether a `syscall` line ("<number> <arg0> <arg1> <arg2> …", or "running") says the
    /// thread waits in `futex` to take a lock: `FUTEX_LOCK_PI` or `FUTEX_LOCK_PI2`, or
    /// `FUTEX_WAIT` on the value 2 (with or without `FUTEX_PRIVATE_FLAG`).
    static func waitsForLock(syscall line: [UInt8]) -> Bool {
        let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 4)
        func hex(_ index: Int) -> Int? {
            guard index < fields.count else { return nil }
            let text = String(decoding: fields[index], as: UTF8.self)
            return text.hasPrefix("0x") ? Int(text.dropFirst(2), radix: 16) : nil
        }
        guard let futexCall, let first = fields.first,
              Int(String(decoding: first, as: UTF8.self)) == futexCall,
              let operation = hex(2)
        else { return false }
        let wait = 0, lockPI = 6, lockPI2 = 13, commandMask = 0x7f, lockedWithWaiters = 2
        switch operation & commandMask {
        case lockPI, lockPI2: return true
        case wait: return hex(3) == lockedWithWaiters
        default: return false
        }
    }
    #endif
}
