import Dispatch

/// A queue's workers, as its state keeps them: the slots running (a worker holds a slot,
/// 0..<64, for as long as it runs; the slot names its Dispatch lane and its lane in a
/// timeline), the lanes made, and what the watchdog knows. Part of `QueueCore`, under the
/// queue's lock; `QueueCore` decides how many run (`QueueCore+Workers.swift`).
struct WorkerPool {
    static let maximum = 64
    static let processorCount = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// The workers running.
    private(set) var count = 0
    private(set) var busySlots: UInt64 = 0
    /// With the default limit: how many workers may run. Starts at the processor count;
    /// the watchdog raises it while workers are blocked, and it falls back when the queue is
    /// idle, when its last worker ends, or when the watchdog finds no worker blocked.
    private(set) var grownLimit = WorkerPool.processorCount
    private(set) var isWatchdogArmed = false
    /// The probes of the running workers, by slot (default limit only).
    private(set) var probes: [WorkerThreadProbe?] = []
    /// The slots whose workers the watchdog's previous tick found blocked.
    private(set) var blockedAtLastTick: UInt64 = 0
    /// The watchdog's ticks in a row at which no operation had finished since it was armed.
    private(set) var ticksWithoutProgress = 0
    /// After this many ticks without a finish (about 100 ms), workers waiting for a lock
    /// count as blocked.
    static let ticksBeforeLockWaitsCount = 25
    /// The serial Dispatch queues workers run on, by slot, made on first use.
    private var lanes: [DispatchQueue?] = []
    /// The worker on Dispatch's shared pool, if any (see `SharedPoolWorker`).
    var shared = SharedPoolWorker()

    /// Takes the lowest free slot for a new worker; nil when all are busy.
    mutating func takeSlot() -> Int? {
        let slot = (~busySlots).trailingZeroBitCount
        guard slot < Self.maximum else { return nil }
        busySlots |= 1 << UInt64(slot)
        count += 1
        return slot
    }

    /// The worker of `slot` ends: its slot is free. When it was the last, nothing blocks a
    /// worker any more: the allowance falls back to the processor count (the queue may still
    /// have asynchronous operations running, which hold no worker).
    mutating func retire(slot: Int) {
        shared.retired(slot: slot)
        count -= 1
        busySlots &= ~(1 << UInt64(slot))
        if slot < probes.count { probes[slot] = nil }
        if count == 0 { resetGrowth() }
    }

    /// The lane of `slot`, made with `quality` on first use.
    mutating func lane(_ slot: Int, quality: QualityOfService) -> DispatchQueue {
        if lanes.isEmpty { lanes = Array(repeating: nil, count: Self.maximum) }
        return lanes[slot].madeOnFirstUse {
            DispatchQueue(label: "swift-operations.lane.\(slot)", qos: DispatchQoS(quality))
        }
    }

    /// Dispatch's shared (global, concurrent) queue for `quality` (looked up once: each
    /// `DispatchQueue.global(qos:)` makes a new wrapper object).
    static func sharedPool(_ quality: QualityOfService) -> DispatchQueue {
        switch quality {
        case .userInteractive: sharedPools.userInteractive
        case .userInitiated: sharedPools.userInitiated
        case .utility: sharedPools.utility
        case .background: sharedPools.background
        default: sharedPools.default
        }
    }

    private static let sharedPools = (
        userInteractive: DispatchQueue.global(qos: .userInteractive),
        userInitiated: DispatchQueue.global(qos: .userInitiated),
        default: DispatchQueue.global(qos: .default),
        utility: DispatchQueue.global(qos: .utility),
        background: DispatchQueue.global(qos: .background)
    )

    /// The queue's quality of service changed: new workers run on new lanes.
    mutating func dropLanes() {
        lanes = []
    }

    /// The worker of `slot` runs on the thread that `probe` reads.
    mutating func started(slot: Int, probe: WorkerThreadProbe) {
        if probes.isEmpty { probes = Array(repeating: nil, count: Self.maximum) }
        probes[slot] = probe
    }

    /// What the watchdog reads of the running workers under the lock, by slot.
    var samples: [(slot: Int, sample: WorkerThreadProbe.Sample)] {
        probes.indices.compactMap { slot in probes[slot].map { (slot, $0.sample) } }
    }

    /// Arms the watchdog; false when it is armed already.
    mutating func armWatchdog() -> Bool {
        guard !isWatchdogArmed else { return false }
        isWatchdogArmed = true
        return true
    }

    /// The watchdog fired with the slots whose workers count as blocked now. Returns those
    /// blocked at this tick and the previous one. When no worker was blocked at either tick,
    /// the allowance falls back to the processor count: the workers beyond it end as they
    /// finish their operations.
    mutating func watchdogFired(blockedSlots: UInt64) -> UInt64 {
        isWatchdogArmed = false
        let confirmed = blockedSlots & blockedAtLastTick
        if blockedSlots | blockedAtLastTick == 0 { resetGrowth() }
        blockedAtLastTick = blockedSlots
        return confirmed
    }

    /// The watchdog ticked; `progressed`: an operation finished since it was armed.
    /// Returns the ticks in a row without a finish (only a finish ends a stall).
    mutating func ticked(progressed: Bool) -> Int {
        ticksWithoutProgress = progressed ? 0 : ticksWithoutProgress + 1
        return ticksWithoutProgress
    }

    /// Allows up to `limit` workers (at most `maximum`) while the running ones are blocked.
    mutating func grow(to limit: Int) {
        grownLimit = min(limit, Self.maximum)
    }

    /// The allowance falls back to the processor count.
    mutating func resetGrowth() {
        grownLimit = Self.processorCount
    }
}
