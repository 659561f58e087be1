@testable import Operations
import Testing

#if os(Linux)
/// What the watchdog reads of a worker's thread on Linux: whether it sleeps, and whether it
/// sleeps waiting for a lock (which does not count as blocked).
@Suite("Reading a worker thread's state")
struct WorkerThreadProbeTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test("a stat line's state letter after the name's last parenthesis")
    func stateLetter() {
        #expect(WorkerThreadProbe.isSleeping(stat: Self.bytes("42 (worker) S 1 2 3")))
        #expect(WorkerThreadProbe.isSleeping(stat: Self.bytes("42 (disk) D 1 2 3")))
        #expect(!WorkerThreadProbe.isSleeping(stat: Self.bytes("42 (busy) R 1 2 3")))
        // A name with spaces and parentheses: ") S" inside it is not the state.
        #expect(!WorkerThreadProbe.isSleeping(stat: Self.bytes("42 (a) S (b)) R 1 2")))
        #expect(!WorkerThreadProbe.isSleeping(stat: Self.bytes("42 (cut")))
    }

    #if arch(x86_64)
    @Test("a futex wait to take a lock is a lock wait; waits on semaphores, conditions and sleeps are not")
    func lockWaits() {
        func line(_ operation: String, _ value: String) -> [UInt8] {
            Self.bytes("202 0x7f12345678 \(operation) \(value) 0x0 0x0 0x0 0x7ffd 0x7f00")
        }
        // FUTEX_LOCK_PI and FUTEX_LOCK_PI2, private or not (Swift's Mutex, Dispatch's locks).
        for operation in ["0x86", "0x8d", "0x6", "0xd"] {
            #expect(WorkerThreadProbe.waitsForLock(syscall: line(operation, "0x0")))
        }
        // FUTEX_WAIT on 2, private or not (glibc's mutexes: NSLock, malloc's arenas).
        #expect(WorkerThreadProbe.waitsForLock(syscall: line("0x80", "0x2")))
        #expect(WorkerThreadProbe.waitsForLock(syscall: line("0x0", "0x2")))
        // FUTEX_WAIT on another value, FUTEX_WAIT_BITSET (semaphores, conditions).
        #expect(!WorkerThreadProbe.waitsForLock(syscall: line("0x80", "0x0")))
        #expect(!WorkerThreadProbe.waitsForLock(syscall: line("0x80", "0xffffffff")))
        #expect(!WorkerThreadProbe.waitsForLock(syscall: line("0x89", "0x2")))
        #expect(!WorkerThreadProbe.waitsForLock(syscall: line("0x89", "0x0")))
        #expect(!WorkerThreadProbe.waitsForLock(syscall: Self.bytes("230 0x0 0x0 0x7ffc 0x7ffc 0x0 0x0 0x7ffc 0x7f14")))
        #expect(!WorkerThreadProbe.waitsForLock(syscall: Self.bytes("running")))
        #expect(!WorkerThreadProbe.waitsForLock(syscall: Self.bytes("-1 0x7ffc 0x7f14")))
        #expect(!WorkerThreadProbe.waitsForLock(syscall: Self.bytes("202 0x7f12345678")))
    }
    #endif
}
#endif
