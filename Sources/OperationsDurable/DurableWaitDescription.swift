// Why a stored operation is not running, in a sentence.
#if Durable

import Foundation

enum DurableWaitDescription {
    static func describe(_ facts: DurableWaitFacts) -> String {
        let record = facts.record
        let name = "\(record.id) (\(record.kind)) on queue \"\(record.queue)\""
        switch record.state {
        case .succeeded: return "\(name) succeeded"
        case .failed: return "\(name) failed: \(record.error ?? "")"
        case .cancelled: return "\(name) was cancelled: \(record.cancelReason ?? "")"
        case .running: return "\(name) is running (attempt \(record.attempt))"
        case .waiting:
            return "\(name) waits for \(record.unfinishedDependencies) unfinished dependenc\(record.unfinishedDependencies == 1 ? "y" : "ies")"
        case .ready:
            var reasons: [String] = []
            if facts.queueSuspended { reasons.append("the queue is suspended") }
            if record.notBefore > facts.now {
                let seconds = record.notBefore.timeIntervalSince(facts.now)
                let why = record.attempt > 0 ? "retry backoff after attempt \(record.attempt) failed" : "scheduled for later"
                reasons.append("\(why): claimable in \(String(format: "%.1f", seconds)) s")
            }
            if !facts.liveWorkerKnowsKind {
                reasons.append("no live worker serving this queue is registered for kind \"\(record.kind)\"")
            }
            if let limit = facts.queueLimit, facts.queueRunning >= limit {
                reasons.append("the queue's limit is reached (\(facts.queueRunning) of \(limit) running)")
            }
            if reasons.isEmpty { return "\(name) is ready and waits for a worker to claim it" }
            return "\(name) is ready but not running: " + reasons.joined(separator: "; ")
        }
    }
}
#endif
