@testable import Operations
import Testing

#if os(Linux)
/// What the watchdog reads of a worker's thread on Linux: whether it sleeps, and whether it
/// sleeps waiting for a Swift `Mutex` (which does not count as blocked).
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
    @Test("a futex wait to take a priority-inheriting lock is a Mutex; other waits and calls are not")
    func mutexWaits() {
        // FUTEX_LOCK_PI and FUTEX_LOCK_PI2, private or not.
        for operation in ["0x86", "0x8d", "0x6", "0xd"] {
            #expect(WorkerThreadProbe.waitsForMutex(syscall: Self.bytes("202 0x7f12345678 \(operation) 0x0 0x0 0x0 0x0 0x7ffd 0x7f00")))
        }
        // FUTEX_WAIT_PRIVATE and FUTEX_WAIT_BITSET_PRIVATE (semaphores, conditions, glibc locks).
        for operation in ["0x80", "0x89", "0x0"] {
            #expect(!WorkerThreadProbe.waitsForMutex(syscall: Self.bytes("202 0x7f12345678 \(operation) 0x2 0x0 0x0 0x0 0x7ffd 0x7f00")))
        }
        #expect(!WorkerThreadProbe.waitsForMutex(syscall: Self.bytes("230 0x0 0x0 0x7ffc 0x7ffc 0x0 0x0 0x7ffc 0x7f14")))
        #expect(!WorkerThreadProbe.waitsForMutex(syscall: Self.bytes("running")))
        #expect(!WorkerThreadProbe.waitsForMutex(syscall: Self.bytes("-1 0x7ffc 0x7f14")))
    }
    #endif
}
#endif
