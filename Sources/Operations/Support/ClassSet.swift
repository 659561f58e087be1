import Synchronization

/// A small set of classes that only grows, read without a lock: for per-class answers
/// asked on every call (a key-value announcement), where even an uncontended lock and a
/// dictionary lookup cost more than the rest of the call.
///
/// Open addressing over a fixed number of atomic slots, each holding a class's metadata
/// address or zero. A class is added once and never removed; when the slots are full, an
/// insertion is dropped and `contains` answers false for that class (the caller's slower
/// path then answers instead).
///
/// - Note: `@unchecked Sendable`: the slots are atomics, written only by compare-and-exchange
///   from zero, allocated once and never moved.
final class ClassSet: @unchecked Sendable {
    /// A power of two.
    private static let capacity = 64
    private let slots: UnsafeMutablePointer<Atomic<UInt>>

    init() {
        slots = .allocate(capacity: Self.capacity)
        for index in 0..<Self.capacity {
            (slots + index).initialize(to: Atomic(0))
        }
    }

    deinit {
        slots.deinitialize(count: Self.capacity)
        slots.deallocate()
    }

    /// Whether `type` was inserted (false also when it was dropped from a full set).
    @inline(__always)
    func contains(_ type: AnyClass) -> Bool {
        let address = UInt(bitPattern: ObjectIdentifier(type))
        var index = Self.firstIndex(of: address)
        for _ in 0..<Self.capacity {
            let found = slots[index].load(ordering: .acquiring)
            if found == address { return true }
            if found == 0 { return false }
            index = (index + 1) & (Self.capacity - 1)
        }
        return false
    }

    /// Adds `type` (a no-op when it is in the set, or when the set is full).
    func insert(_ type: AnyClass) {
        let address = UInt(bitPattern: ObjectIdentifier(type))
        var index = Self.firstIndex(of: address)
        for _ in 0..<Self.capacity {
            let (exchanged, found) = slots[index].compareExchange(
                expected: 0, desired: address, ordering: .acquiringAndReleasing)
            if exchanged || found == address { return }
            index = (index + 1) & (Self.capacity - 1)
        }
    }

    /// Metadata is aligned: the low bits say nothing.
    @inline(__always)
    private static func firstIndex(of address: UInt) -> Int {
        Int(truncatingIfNeeded: (address >> 4) ^ (address >> 10)) & (capacity - 1)
    }
}
