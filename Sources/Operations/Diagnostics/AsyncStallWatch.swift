import Dispatch

/// The `async` waits that are suspended now, watched for ones that cannot make progress:
/// the counterpart of `StallReport`, whose blocked thread looks for itself.
///
/// A suspended task has no thread to look with, so one timer looks for all of them. A
/// wait registers when it suspends (the call, and what it waits for) and leaves when it
/// resumes. The timer fires when the earliest look is due; each wait is looked at after
/// ``OperationDiagnostic/stallReportDelay``, then at doubling intervals (as a blocking
/// wait, and skipping the analysis as it does: ``StallLooks``), until it is reported once.
/// The timer cancels itself on a tick that finds nothing left to look at; the next
/// registration makes a new one. No task or thread per wait, and a wait that does not
/// suspend (what it waits for is done) costs nothing.
final class AsyncStallWatch: Sendable {
    private struct Entry {
        let call: StallReport.Call
        /// What the wait waits for, read at each look (no lock held); nil: the call's
        /// operation, or its queue's operations.
        let targets: (@Sendable () -> [Operation])?
        /// The time waited at the next look: the sum of the intervals so far, as a blocking
        /// wait says it.
        var waited: Duration
        var interval: Duration
        /// Uptime of the next look, in nanoseconds.
        var nextLook: UInt64
        var hasReported = false
        /// Skips the analysis at looks after progress (see ``StallLooks``).
        var looks: StallLooks
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var nextID: UInt64 = 0
        var timer: (any DispatchSourceTimer)?
        /// Uptime the timer is set for, in nanoseconds; nil when it is not set.
        var firesAt: UInt64?
    }

    /// The process's watch: `stallReportDelay` and the handler are process-wide too.
    static let shared = AsyncStallWatch()

    private let state = Locked(State())
    /// The timer's queue: serial, so that ticks never overlap.
    private let timerQueue = DispatchQueue(label: "swift-operations.stall-watch", qos: .utility)

    /// Registers a wait that is about to suspend; returns its registration, to pass to
    /// ``end(_:)`` when it resumes. `targets` lists what it waits for when the call does
    /// not say (the call's operation, or its queue's operations). With a delay of zero,
    /// looks once, now (as a blocking wait does when it begins), and registers nothing.
    func begin(_ call: StallReport.Call, targets: (@Sendable () -> [Operation])? = nil) -> UInt64? {
        let delay = OperationDiagnostic.stallReportDelay
        if delay == .zero {
            StallReport.report(call, stuck: Self.stuck(call, targets?() ?? call.targets), waited: nil)
            return nil
        }
        let lookAt = DispatchTime.now().uptimeNanoseconds &+ UInt64(StallReport.nanoseconds(delay))
        let looks = StallLooks(beganAt: call.progressMark)
        return state.withLock { state in
            state.nextID += 1
            state.entries[state.nextID] = Entry(
                call: call, targets: targets, waited: delay, interval: delay, nextLook: lookAt, looks: looks)
            if state.firesAt.map({ lookAt < $0 }) ?? true { schedule(&state, at: lookAt) }
            return state.nextID
        }
    }

    /// The wait resumed: it is no longer watched.
    func end(_ registration: UInt64?) {
        guard let registration else { return }
        // Released after the lock: the closure's captures may be the last references.
        let removed = state.withLock { $0.entries.removeValue(forKey: registration) }
        _ = removed
    }

    /// The operations of `targets` that cannot make progress, when that stalls `call`.
    private static func stuck(_ call: StallReport.Call, _ targets: [Operation]) -> [(operation: Operation, cause: StallAnalysis.Cause)] {
        let stuck = StallAnalysis.stuck(among: targets)
        return call.waitsForEvery || stuck.count == targets.count ? stuck : []
    }

    /// Sets the timer (made on first use) to fire at `deadline`. Under the lock, so that a
    /// tick that cancels the timer and a registration that needs it cannot cross; Dispatch
    /// calls only, which neither block nor run user code.
    private func schedule(_ state: inout State, at deadline: UInt64) {
        let timer = state.timer.madeOnFirstUse {
            let timer = DispatchSource.makeTimerSource(queue: timerQueue)
            timer.setEventHandler { [self] in tick() }
            timer.resume()
            return timer
        }
        timer.schedule(deadline: DispatchTime(uptimeNanoseconds: deadline), leeway: .milliseconds(5))
        state.firesAt = deadline
    }

    /// A wait found stalled at a tick, to report after the lock.
    private typealias Report = (
        call: StallReport.Call, stuck: [(operation: Operation, cause: StallAnalysis.Cause)], waited: Duration
    )

    private func tick() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { state -> [(id: UInt64, entry: Entry)] in
            state.firesAt = nil
            return state.entries.compactMap { id, entry in
                !entry.hasReported && entry.nextLook <= now ? (id, entry) : nil
            }
        }
        // Looked at with no lock held: the analysis reads overridden getters.
        let looked = due.map { id, entry in
            var looks = entry.looks
            let analyses = looks.analyses(
                at: entry.call.progressMark, afterLongestInterval: entry.interval >= StallReport.longestInterval)
            let stuck = analyses ? Self.stuck(entry.call, entry.targets?() ?? entry.call.targets) : []
            return (id: id, looks: looks, stuck: stuck)
        }
        let reports = state.withLock { state -> [Report] in
            var reports: [Report] = []
            for look in looked {
                // A wait that resumed meanwhile is not reported.
                guard var entry = state.entries[look.id] else { continue }
                entry.looks = look.looks
                if !look.stuck.isEmpty {
                    entry.hasReported = true
                    reports.append((entry.call, look.stuck, entry.waited))
                } else {
                    entry.interval = min(entry.interval * 2, StallReport.longestInterval)
                    entry.waited += entry.interval
                    entry.nextLook = now &+ UInt64(StallReport.nanoseconds(entry.interval))
                }
                state.entries[look.id] = entry
            }
            // The next tick: the earliest look still to make; with none, the timer goes.
            if let next = state.entries.values.lazy.filter({ !$0.hasReported }).map(\.nextLook).min() {
                schedule(&state, at: next)
            } else {
                state.timer?.cancel()
                state.timer = nil
            }
            return reports
        }
        for report in reports {
            StallReport.report(report.call, stuck: report.stuck, waited: report.waited)
        }
    }
}
