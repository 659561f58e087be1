import Operations
import OperationsComposition
import Testing

/// Seeded randomized stress of the composition layer: nested groups, conditions (passing
/// and failing, some suspending), exclusive and shared categories across queues, random
/// dependencies and cancellations. Invariants: exclusivity is never violated, no operation
/// whose condition failed runs, every group finishes after its children, and everything
/// finishes (no deadlock).
///
/// Runs for a third of `OPERATIONS_STRESS_SECONDS` (default 5); `OPERATIONS_STRESS_SEED`
/// replays one seed.
@Suite("Composition stress", .serialized)
struct CompositionStressTests {
    @Test("groups, conditions and exclusive categories keep every invariant")
    func randomCompositions() async {
        // On a thread of its own: the rounds block while they wait (see `onOwnThread`).
        let (failure, rounds) = await onOwnThread { () -> (String?, Int) in
            let environment = ProcessInfo.processInfo.environment
            let seconds = (Double(environment["OPERATIONS_STRESS_SECONDS"] ?? "") ?? 5) / 3
            let fixedSeed = environment["OPERATIONS_STRESS_SEED"].flatMap(UInt64.init)
            let deadline = Date().addingTimeInterval(seconds)
            var seed = fixedSeed ?? UInt64(Date().timeIntervalSince1970 * 1000)
            var rounds = 0
            repeat {
                let failures = CompositionRound(seed: seed).run()
                rounds += 1
                if !failures.isEmpty {
                    return ("composition stress seed \(seed) (rerun with OPERATIONS_STRESS_SEED=\(seed)):\n\(failures.prefix(20).joined(separator: "\n"))", rounds)
                }
                seed &+= 0x9E37_79B9
            } while fixedSeed == nil && Date() < deadline
            return (nil, rounds)
        }
        if let failure { Issue.record("\(failure)") }
        #expect(rounds > 0)
    }
}


/// Holders per category, and the failures seen.
final class CompositionLedger: Sendable {
    private let state = Shared<(holders: [String: (exclusive: Int, shared: Int)], failures: [String])>(([:], []))

    func fail(_ message: String) { state.update { $0.failures.append(message) } }
    var failures: [String] { state().failures }

    func enter(_ categories: [(String, ExclusivityMode)], id: Int) {
        state.update { state in
            for (category, mode) in categories {
                var now = state.holders[category] ?? (0, 0)
                if mode == .exclusive { now.exclusive += 1 } else { now.shared += 1 }
                if now.exclusive > 1 || (now.exclusive == 1 && now.shared > 0) {
                    state.failures.append("operation \(id) broke the exclusivity of \(category): \(now)")
                }
                state.holders[category] = now
            }
        }
    }

    func leave(_ categories: [(String, ExclusivityMode)]) {
        state.update { state in
            for (category, mode) in categories {
                if mode == .exclusive { state.holders[category]!.exclusive -= 1 } else { state.holders[category]!.shared -= 1 }
            }
        }
    }
}

struct CompositionRound {
    let seed: UInt64

    func run() -> [String] {
        var random = SplitMix64(seed: seed)
        let ledger = CompositionLedger()
        let categories = (0..<3).map { "stress-\(seed)-\($0)" }
        let queues = (0..<3).map { _ in OperationQueue() }
        queues[1].maxConcurrentOperationCount = 1
        queues[2].maxConcurrentOperationCount = 2
        var all: [Operation] = []
        var topLevel: [(Operation, Int)] = []
        var groups: [GroupOperation] = []

        func leaf(_ id: Int) -> Operation {
            var chosen: [(String, ExclusivityMode)] = []
            if random.next() % 3 == 0 {
                chosen.append((categories[Int(random.next() % 3)], random.next() % 2 == 0 ? .exclusive : .shared))
            }
            if random.next() % 5 == 0 {
                let second = categories[Int(random.next() % 3)]
                if !chosen.contains(where: { $0.0 == second }) { chosen.append((second, .exclusive)) }
            }
            let held = chosen
            let conditionFails = random.next() % 6 == 0
            let suspends = random.next() % 2 == 0
            let operation = BlockOperation {
                ledger.enter(held, id: id)
                if conditionFails { ledger.fail("operation \(id) ran although its condition failed") }
                var x = 0
                for i in 0..<Int(id % 200) { x &+= i }
                if x == -1 { print(x) }
                ledger.leave(held)
            }
            for (category, mode) in held { operation.addExclusivity(category, mode: mode) }
            if random.next() % 3 == 0 || conditionFails {
                operation.addCondition(BlockCondition { _ in
                    if suspends { await Task.yield() }
                    return !conditionFails
                })
            }
            all.append(operation)
            return operation
        }

        var nextID = 0
        for _ in 0..<40 {
            nextID += 1
            let operation: Operation
            if random.next() % 4 == 0 {
                // A group, sometimes nested, checking that it finishes after its children.
                let children = (0..<Int(1 + random.next() % 4)).map { _ -> Operation in
                    nextID += 1
                    if random.next() % 4 == 0 {
                        let inner = GroupOperation(operations: (0..<2).map { _ in nextID += 1; return leaf(nextID) })
                        groups.append(inner)
                        all.append(inner)
                        // Sometimes wrapped in groups deeper than finishes are announced
                        // nested (they are handed back to the outermost announcement).
                        var wrapped: GroupOperation = inner
                        if random.next() % 8 == 0 {
                            for _ in 0..<(NestedAnnouncements.depthLimit + 1 + Int(random.next() % 24)) {
                                wrapped = GroupOperation(operations: [wrapped])
                                groups.append(wrapped)
                                all.append(wrapped)
                            }
                        }
                        return wrapped
                    }
                    return leaf(nextID)
                }
                let group = GroupOperation(operations: children, failurePolicy: random.next() % 2 == 0 ? .failFast : .finishAll)
                groups.append(group)
                all.append(group)
                operation = group
            } else {
                operation = leaf(nextID)
            }
            if let earlier = topLevel.last, random.next() % 3 == 0 { operation.addDependency(earlier.0) }
            // A group holds its queue's slot while its children run: on a serial queue, a
            // child waiting for a category granted to an operation queued behind the group
            // would wait forever (documented). Groups go to the queue without a limit.
            topLevel.append((operation, operation is GroupOperation ? 0 : Int(random.next() % 3)))
        }
        for group in groups {
            let children = group.children
            group.completionBlock = { [ledger] in
                for child in children where !child.isFinished {
                    ledger.fail("a group finished before its child \(child._debugName)")
                }
            }
        }
        for (operation, queue) in topLevel { queues[queue].addOperation(operation) }
        let cancels = Int(random.next() % 4)
        for _ in 0..<cancels { all[Int(random.next() % UInt64(all.count))].cancel() }
        // Polled from this thread: no other thread is blocked while the round finishes.
        if !eventually(timeout: 20, { all.allSatisfy { $0.isFinished } }) {
            let stuck = all.first { !$0.isFinished }!
            ledger.fail("\(stuck.waitDescription) (stuck: no finish after 20 s)")
        }
        return ledger.failures
    }
}

extension Operation {
    var _debugName: String { name ?? "\(type(of: self))" }
}
