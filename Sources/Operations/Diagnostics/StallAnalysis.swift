/// Finds the operations, among some that a thread waits for, that cannot make progress
/// without someone else acting: a dependency cycle, a dependency in no queue, a suspended
/// queue, a limit of 0 (directly or through any chain of dependencies and barriers).
///
/// Reads only public state (``Operation/waitReasons``), so it takes no lock of its own and
/// may call overridden getters. Iterative, so a chain of thousands of operations does not
/// exhaust a thread's stack.
struct StallAnalysis {
    /// Why an operation cannot make progress: the root cause, for a person.
    typealias Cause = String

    private enum Verdict {
        case progresses
        case stuck(Cause)

        var cause: Cause? {
            if case .stuck(let cause) = self { return cause }
            return nil
        }
    }

    private var verdicts: [ObjectIdentifier: Verdict] = [:]
    /// Operations whose verdict is being decided (the current path): meeting one again is a cycle.
    private var onPath: [ObjectIdentifier: Int] = [:]

    /// The operations of `targets` that cannot make progress, each with its cause.
    static func stuck(among targets: [Operation]) -> [(operation: Operation, cause: Cause)] {
        var analysis = StallAnalysis()
        return targets.compactMap { target in
            if case .stuck(let cause) = analysis.verdict(for: target) { return (target, cause) }
            return nil
        }
    }

    private struct Frame {
        let operation: Operation
        /// The operations it waits for (dependencies, barriers), still to decide.
        var waitsFor: [Operation]
        var next = 0
    }

    private mutating func verdict(for root: Operation) -> Verdict {
        if let known = verdicts[ObjectIdentifier(root)] { return known }
        var path: [Frame] = []
        // The verdict of the operation just looked at, for the frame below it (nil: it
        // progresses, or it is being looked at).
        var stuckChild: Cause? = begin(root, path: &path).cause
        while !path.isEmpty {
            if let cause = stuckChild {
                // Waiting for something stuck is being stuck, for the same root cause.
                finish(&path, .stuck(cause))
                continue
            }
            let top = path.count - 1
            guard path[top].next < path[top].waitsFor.count else {
                finish(&path, .progresses)
                continue
            }
            let child = path[top].waitsFor[path[top].next]
            path[top].next += 1
            let id = ObjectIdentifier(child)
            if let known = verdicts[id] {
                stuckChild = known.cause
            } else if let index = onPath[id] {
                let names = path[index...].map { $0.operation._stallName } + [child._stallName]
                let inWait = path[index...].contains { BlockedWaits.targets(of: $0.operation) != nil }
                stuckChild = inWait
                    ? "deadlock \(names.joined(separator: " → ")) (each waits for the next: a wait inside a running operation for work that needs the slot it holds, or that it depends on)"
                    : "dependency cycle \(names.joined(separator: " → ")) (each waits for the next; cancel one to break it)"
            } else {
                stuckChild = begin(child, path: &path).cause
            }
        }
        return verdicts[ObjectIdentifier(root)] ?? .progresses
    }

    /// Decides an operation from its own reasons (a reason of its own, like a suspended
    /// queue, is reported before what its dependencies wait for), or pushes a frame to look
    /// at what it waits for (and returns `.progresses`: not decided yet).
    private mutating func begin(_ operation: Operation, path: inout [Frame]) -> Verdict {
        var waitsFor: [Operation] = []
        for reason in operation.waitReasons {
            switch reason {
            case .executing:
                // Its work blocked in a wait: it progresses when what it waits for does.
                guard let targets = BlockedWaits.targets(of: operation) else { return record(operation, .progresses) }
                waitsFor += targets
            case .finished, .waitingForWorker, .isReadyReturnsFalse:
                return record(operation, .progresses)
            case .condition(_, let contributed?):
                waitsFor.append(contributed)
            case .condition(_, nil), .exclusivity:
                // Evaluated, or handed over, by the composition layer as others finish.
                return record(operation, .progresses)
            case .concurrencyLimit(let queue, let limit):
                if limit == 0 { return record(operation, .stuck("\(operation._stallName): \(Operation.WaitReason.concurrencyLimit(queue, limit: 0))")) }
                // Every slot held by an operation blocked in a wait: it waits for them.
                let holders = BlockedWaits.blocked(in: queue)
                guard holders.count >= limit else { return record(operation, .progresses) }
                waitsFor += holders
            case .queueSuspended, .notInQueue, .finishedWithoutAnnouncement:
                return record(operation, .stuck("\(operation._stallName): \(reason)"))
            case .dependency(let dependency, _), .barrier(let dependency):
                waitsFor.append(dependency)
            }
        }
        if waitsFor.isEmpty { return record(operation, .progresses) }
        onPath[ObjectIdentifier(operation)] = path.count
        path.append(Frame(operation: operation, waitsFor: waitsFor))
        // Undecided: the frame decides once it has looked at what it waits for.
        return .progresses
    }

    private mutating func record(_ operation: Operation, _ verdict: Verdict) -> Verdict {
        verdicts[ObjectIdentifier(operation)] = verdict
        return verdict
    }

    private mutating func finish(_ path: inout [Frame], _ verdict: Verdict) {
        let frame = path.removeLast()
        onPath[ObjectIdentifier(frame.operation)] = nil
        verdicts[ObjectIdentifier(frame.operation)] = verdict
    }
}

extension StallAnalysis {
    /// One line for a person: the stuck operations (the first few) and their causes.
    static func describe(_ stuck: [(operation: Operation, cause: Cause)], limit: Int = 5) -> String {
        var parts: [String] = []
        for (operation, cause) in stuck.prefix(limit) {
            parts.append(cause.hasPrefix(operation._stallName + ":") ? cause : "\(operation._stallName) waits on \(cause)")
        }
        if stuck.count > limit { parts.append("and \(stuck.count - limit) more") }
        return parts.joined(separator: "; ")
    }
}

extension Operation {
    /// How stall reports name an operation: `"name"`, or `<Type: 0x…>`.
    var _stallName: String {
        if let name { return "\"\(name)\"" }
        return "<\(type(of: self)): \(_address)>"
    }
}
