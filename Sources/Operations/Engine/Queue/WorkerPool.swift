import Dispatch

/// A queue's workers, as its state keeps them: the slots running (a worker holds a slot,
/// 0..<64, for as long as it runs; the slot names its Dispatch lanes and its lane in a
/// timeline), the lanes made, and what the watchdog knows. Part of `QueueCore`, under the
/// queue's lock; `QueueCore` decides how many run (`QueueCore+Workers.swift`).
///
/// Each slot has two lanes, serial Dispatch queues on two pools of threads:
/// - its own lane, on the pool that adds a thread whenever one is wanted (Dispatch's
///   overcommit pool): operations that may block run there, so that they overlap up to
///   the queue's limit as on Darwin;
/// - its shared lane, on the pool that also runs Swift's tasks:
///   operations whose `start()` hands their work elsewhere and returns
///   (`Operation._startsBriefly`) start there. Their work often ends on a thread of that
///   pool, and the worker that starts the next one then runs on the same pool instead of
///   waking a thread of another.
struct WorkerPool {
    static let maximum = 64
    static let processorCount = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// The workers running.
    private(set) var count = 0
    private(set) var busySlots: UInt64 = 0
    /// With the default limit: how many workers may run. Starts at the processor count;
    /// the watchdog raises it while workers are blocked, and it falls back when idle.
    private(set) var grownLimit = WorkerPool.processorCount
    private(set) var isWatchdogArmed = false
    /// The CPU clocks of the running workers, by slot (default limit only).
    private(set) var probes: [WorkerThreadProbe?] = []
    /// The slots whose workers the watchdog's previous tick found blocked.
    private(set) var blockedAtLastTick: UInt64 = 0
    /// The serial Dispatch queues workers run on, by slot, made on first use.
    private var lanes: [DispatchQueue?] = []
    /// The shared lanes, by slot, made on first use.
    private var sharedLanes: [DispatchQueue?] = []

    /// Takes the lowest free slot for a new worker; nil when all are busy.
    mutating func takeSlot() -> Int? {
        let slot = (~busySlots).trailingZeroBitCount
        guard slot < Self.maximum else { return nil }
        busySlots |= 1 << UInt64(slot)
        count += 1
        return slot
    }

    /// The worker of `slot` ends: its slot is free.
    mutating func retire(slot: Int) {
        count -= 1
        busySlots &= ~(1 << UInt64(slot))
        if slot < probes.count { probes[slot] = nil }
    }

    /// The lane of `slot`, made with `quality` on first use: its own, or its shared one.
    mutating func lane(_ slot: Int, quality: QualityOfService, shared: Bool) -> DispatchQueue {
        if shared {
            if sharedLanes.isEmpty { sharedLanes = Array(repeating: nil, count: Self.maximum) }
            return sharedLanes[slot].madeOnFirstUse {
                let qos = Self.sharedPoolQuality(quality)
                return DispatchQueue(
                    label: "\(Self.sharedLanePrefix)\(slot)", qos: qos, target: .global(qos: qos.qosClass))
            }
        }
        if lanes.isEmpty { lanes = Array(repeating: nil, count: Self.maximum) }
        return lanes[slot].madeOnFirstUse {
            DispatchQueue(label: "\(Self.lanePrefix)\(slot)", qos: DispatchQoS(quality))
        }
    }

    /// The quality of service of the pool the shared lanes of a queue of `quality` run on:
    /// the pool its operations' tasks run on. On Darwin a task takes the quality of service
    /// of the thread that makes it. On Linux every task a thread of Dispatch makes runs at
    /// medium priority on the default pool, whatever that thread's quality of service.
    private static func sharedPoolQuality(_ quality: QualityOfService) -> DispatchQoS {
        #if canImport(Darwin)
        DispatchQoS(quality)
        #else
        .default
        #endif
    }

    /// The labels of the lanes (then the slot).
    static let lanePrefix = "swift-operations.lane."
    static let sharedLanePrefix = "swift-operations.shared-lane."

    /// The queue's quality of service changed: new workers run on new lanes.
    mutating func dropLanes() {
        lanes = []
        sharedLanes = []
    }

    /// The worker of `slot` runs on the thread whose clock `probe` reads.
    mutating func started(slot: Int, probe: WorkerThreadProbe) {
        if probes.isEmpty { probes = Array(repeating: nil, count: Self.maximum) }
        probes[slot] = probe
    }

    /// The clocks of the running workers, for the watchdog to sample.
    var runningProbes: [(slot: Int, probe: WorkerThreadProbe)] {
        probes.indices.compactMap { slot in probes[slot].map { (slot, $0) } }
    }

    /// Arms the watchdog; false when it is armed already.
    mutating func armWatchdog() -> Bool {
        guard !isWatchdogArmed else { return false }
        isWatchdogArmed = true
        return true
    }

    /// The watchdog fired with the slots found blocked now (nil where threads cannot be
    /// probed). Returns those blocked at this tick and the previous one (nil without probes).
    mutating func watchdogFired(blockedSlots: UInt64?) -> UInt64? {
        isWatchdogArmed = false
        let confirmed = blockedSlots.map { $0 & blockedAtLastTick }
        blockedAtLastTick = blockedSlots ?? 0
        return confirmed
    }

    /// Allows up to `limit` workers (at most `maximum`) while the running ones are blocked.
    mutating func grow(to limit: Int) {
        grownLimit = min(limit, Self.maximum)
    }

    /// The queue went idle: the allowance falls back to the processor count.
    mutating func resetGrowth() {
        grownLimit = Self.processorCount
    }
}
