#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A per-thread slot holding an unretained object pointer, on a POSIX thread-specific key.
///
/// Used for `OperationQueue.current` and for the iterative release of dependency chains.
/// The pointer is unretained: whoever sets it keeps the object alive until it restores
/// the previous value.
struct ThreadLocalPointer: Sendable {
    private let key: pthread_key_t

    init() {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "Operations: pthread_key_create failed (\(status))")
        self.key = key
    }

    var value: UnsafeMutableRawPointer? {
        pthread_getspecific(key)
    }

    func set(_ pointer: UnsafeMutableRawPointer?) {
        pthread_setspecific(key, pointer)
    }
}
