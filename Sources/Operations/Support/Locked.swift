import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The library's one lock: a value that can only be reached while its mutex is held.
///
/// Every piece of shared mutable state in `Operations` lives in a `Locked`. The rule that
/// goes with it: decide under the lock, act after it. User code (an operation's `main()`,
/// overridden getters, completion blocks, observers) never runs inside `withLock`.
/// `withLock` is not re-entrant.
///
/// The package's other targets (composition, the recorder, the adapters, the test support)
/// use it too, so that the library keeps one lock type, annotated for Thread Sanitizer. It
/// is SPI rather than `package` because the toolchain inlines (and so specializes) an
/// `@inlinable` function across modules only when it is public: a `package` lock, called
/// unspecialized from another module, asks the runtime for `Mutex<Value>`'s metadata every
/// time. Importers see it only with `@_spi(Engine) import Operations`.
@_spi(Engine)
public struct Locked<Value: ~Copyable>: ~Copyable, Sendable {
    @usableFromInline let mutex: Mutex<Value>

    @inlinable
    public init(_ value: consuming sending Value) {
        mutex = Mutex(value)
    }

    /// Transparent, so that an unoptimized build (tests run in one) inlines it where the
    /// value's type is known: called as a generic function, every section would look up the
    /// metadata of `Mutex<Value>` at run time.
    @_transparent
    public borrowing func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        // The common case, one load: no sanitizer.
        if threadSanitizerState.load(ordering: .relaxed) == ThreadSanitizerAnnotations.absent {
            return try mutex.withLock(body)
        }
        return try withLockAnnotated(body)
    }

    @usableFromInline
    borrowing func withLockAnnotated<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        guard let annotations = ThreadSanitizerAnnotations.loaded else {
            threadSanitizerState.store(ThreadSanitizerAnnotations.absent, ordering: .relaxed)
            return try mutex.withLock(body)
        }
        // The lock's address names it for the sanitizer; it is never dereferenced.
        let address = withUnsafePointer(to: self) { UnsafeRawPointer($0) }
        return try mutex.withLock { (value: inout sending Value) throws(Failure) -> sending Result in
            annotations.acquire(address)
            defer { annotations.release(address) }
            return try body(&value)
        }
    }
}

/// `ThreadSanitizerAnnotations.absent` once a lookup found no sanitizer; 0 before, and for
/// good under the sanitizer (the annotations' addresses are then in the two atomics below).
/// A global atomic with a constant
/// initializer is initialized statically, so every lock reads it with one load; a
/// `static let` costs a `swift_once` call on every lock (about 4% of a tiny operation).
@usableFromInline let threadSanitizerState = Atomic<UInt8>(0)

/// The addresses of the sanitizer's `__tsan_acquire` and `__tsan_release`, 0 until looked
/// up. Atomics with constant initializers, like `threadSanitizerState`: under Thread
/// Sanitizer the runtime makes every `swift_once` take a lock of its own (it never marks
/// the once done for the fast path), so a `static let` read by every `Locked` made one
/// lock that every lock of the process went through, and threads queued on it for long.
@usableFromInline let threadSanitizerAcquire = Atomic<UInt>(0)
@usableFromInline let threadSanitizerRelease = Atomic<UInt>(0)

/// Tells Thread Sanitizer about `Locked`'s critical sections.
///
/// `Synchronization.Mutex` waits with raw futex calls on Linux, which Thread Sanitizer does
/// not see, so without these annotations it reports the data each lock guards as raced.
/// The functions exist only when the sanitizer's runtime is loaded (`--sanitize=thread`).
@usableFromInline
struct ThreadSanitizerAnnotations: Sendable {
    typealias Annotation = @convention(c) (UnsafeRawPointer?) -> Void

    let acquire: Annotation
    let release: Annotation

    @inlinable static var absent: UInt8 { 1 }

    /// The annotations, looked up on first use (two threads may both look them up: they
    /// find the same addresses); nil without the sanitizer.
    static var loaded: ThreadSanitizerAnnotations? {
        // Relaxed: the value is a code address, and nothing else is published with it (an
        // acquiring load makes the sanitizer synchronize every lock on these two addresses).
        var acquire = threadSanitizerAcquire.load(ordering: .relaxed)
        var release = threadSanitizerRelease.load(ordering: .relaxed)
        if acquire == 0 || release == 0 {
            guard let foundAcquire = dlsym(nil, "__tsan_acquire"), let foundRelease = dlsym(nil, "__tsan_release") else {
                return nil
            }
            acquire = UInt(bitPattern: foundAcquire)
            release = UInt(bitPattern: foundRelease)
            threadSanitizerAcquire.store(acquire, ordering: .relaxed)
            threadSanitizerRelease.store(release, ordering: .relaxed)
        }
        return ThreadSanitizerAnnotations(
            acquire: unsafeBitCast(UnsafeRawPointer(bitPattern: acquire)!, to: Annotation.self),
            release: unsafeBitCast(UnsafeRawPointer(bitPattern: release)!, to: Annotation.self))
    }
}
