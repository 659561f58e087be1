#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether a worker thread is blocked (sleeping, waiting for I/O or a lock) or busy
/// (running, or ready to run and waiting for a processor): how the watchdog tells a queue
/// whose operations block from one whose operations compute.
///
/// On Linux, the state letter in `/proc/self/task/<tid>/stat` says it: `R` runnable, `S`
/// sleeping, `D` waiting for I/O. The thread is named by its kernel id, so reading it after
/// the thread ended fails cleanly. Elsewhere there is no probe, and the watchdog falls back
/// to "no operation finished".
struct WorkerThreadProbe: Sendable {
    #if os(Linux)
    /// The thread's kernel id (cheap to take when a worker starts; the file is read only
    /// when the watchdog samples).
    private let threadID: pid_t
    #endif

    #if os(Linux)
    /// This thread's kernel id, once looked up (stored as the pointer's bits).
    private static let threadIDs = ThreadLocalPointer()
    #endif

    /// Whether this platform can probe threads.
    static let isSupported: Bool = current()?.isBlocked() != nil

    /// The probe of the calling thread, where the platform has one.
    static func current() -> WorkerThreadProbe? {
        #if os(Linux)
        // Dispatch reuses its threads: the id is looked up once per thread.
        if let cached = threadIDs.value { return WorkerThreadProbe(threadID: pid_t(Int(bitPattern: cached))) }
        // "/proc/thread-self" links to "<pid>/task/<tid>" (glibc's gettid() is not
        // imported on every toolchain).
        var link = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/thread-self", &link, link.count - 1)
        guard count > 0 else { return nil }
        let text = String(decoding: link[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let last = text.split(separator: "/").last, let threadID = pid_t(last), threadID > 0 else { return nil }
        threadIDs.set(UnsafeMutableRawPointer(bitPattern: Int(threadID)))
        return WorkerThreadProbe(threadID: threadID)
        #else
        return nil
        #endif
    }

    /// Whether the thread is blocked now; nil when it is gone (or cannot be read).
    func isBlocked() -> Bool? {
        #if os(Linux)
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
        #else
        return nil
        #endif
    }
}
