#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How much of the time a worker thread wanted a processor: how the watchdog tells a
/// blocked worker (sleeping, waiting for I/O or a lock) from a busy one.
///
/// On Linux, `/proc/self/task/<tid>/schedstat` gives the time a thread ran and the time it
/// waited in the run queue; their sum grows with wall time for a busy thread (even on a
/// loaded machine, where it mostly waits to run) and stands still for a blocked one. The
/// thread is named by its kernel id, so reading it after the thread ended fails cleanly.
/// Elsewhere there is no probe, and the watchdog falls back to "no operation finished".
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
    static let isSupported: Bool = current()?.activeNanoseconds() != nil

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

    /// Nanoseconds the thread has spent running or ready to run; nil when it is gone.
    func activeNanoseconds() -> UInt64? {
        #if os(Linux)
        let descriptor = open("/proc/self/task/\(threadID)/schedstat", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 96)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        // "<ns on cpu> <ns waiting to run> <timeslices>\n"
        let fields = buffer[..<count].split(separator: UInt8(ascii: " ")).prefix(2)
        let numbers = fields.compactMap { UInt64(String(decoding: $0, as: UTF8.self)) }
        guard numbers.count == 2 else { return nil }
        return numbers[0] &+ numbers[1]
        #else
        return nil
        #endif
    }
}
