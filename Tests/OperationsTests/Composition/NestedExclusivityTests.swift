import Operations
import OperationsComposition
import Testing


/// A group (or a retry) that holds a category, with children (or attempts) in the same
/// category: the ProcedureKit failure mode where a `GroupProcedure` and its child were both
/// mutually exclusive in one category and waited for each other forever. Here the
/// children of a holder contend for the category only among themselves.
@Suite("Exclusivity inside a group that holds the category", .timeLimit(.minutes(1)))
struct NestedExclusivityTests {
    @Test("a child in its exclusive group's category runs (no deadlock)")
    func childOfHolder() {
        let category = unique("cloud")
        let ran = BlockingSignal()
        let child = BlockOperation { ran.open() }
        child.addExclusivity(category)
        let group = GroupOperation(operations: [child])
        group.addExclusivity(category)
        OperationQueue().addOperation(group)
        let childRan = ran.wait()
        #expect(childRan, "the child never ran: \(child.waitDescription)")
        if !childRan { group.cancel() }
        group.waitUntilFinished()
        #expect(group.outcome?.error == nil)
    }

    @Test("exclusive children of an exclusive group still run one at a time; outsiders wait for the group")
    func siblingsStayExclusive() {
        let category = unique("database")
        let inside = Shared(0), most = Shared(0)
        let firstIn = BlockingSignal(), release = BlockingSignal()
        // Whichever child enters first holds the others back until released; each one
        // then waits for the release in turn.
        let children = (0..<4).map { _ in
            let child = BlockOperation {
                let now = inside.update { $0 += 1; return $0 }
                most.update { $0 = max($0, now) }
                firstIn.open()
                _ = release.wait(timeout: 600)
                inside.update { $0 -= 1 }
            }
            child.addExclusivity(category)
            return child
        }
        let group = GroupOperation(operations: children)
        group.addExclusivity(category)
        let outsider = BlockOperation {}
        outsider.addExclusivity(category)
        let queue = OperationQueue()
        queue.addOperation(group)
        #expect(firstIn.wait())
        queue.addOperation(outsider)
        #expect(eventually { outsider.waitReasons == [.gate(.exclusivity([category]))] })
        #expect(eventually { children.filter { !$0.isExecuting }.allSatisfy { $0.waitReasons == [.gate(.exclusivity([category]))] } }, "\(children.map(\.waitReasons))")
        release.open(4)
        outsider.waitUntilFinished()
        #expect(group.isFinished, "the outsider ran while the group held the category")
        #expect(most() == 1)
    }

    @Test("shared children of an exclusive group run together")
    func sharedChildren() {
        let category = unique("files")
        let together = Rendezvous(count: 2)
        let met = Shared(0)
        let children = (0..<2).map { _ in
            let child = BlockOperation { if together.arriveAndWait() { met.update { $0 += 1 } } }
            child.addExclusivity(category, mode: .shared)
            return child
        }
        let group = GroupOperation(operations: children)
        group.addExclusivity(category)
        OperationQueue().addOperation(group)
        group.waitUntilFinished()
        #expect(met() == 2)
    }

    @Test("two levels: a group in a group, each holding the category, and a grandchild")
    func twoLevels() {
        let category = unique("cloud")
        let grandchild = BlockOperation {}
        grandchild.addExclusivity(category)
        let inner = GroupOperation(operations: [grandchild])
        inner.addExclusivity(category)
        let outer = GroupOperation(operations: [inner])
        outer.addExclusivity(category)
        OperationQueue().addOperation(outer)
        outer.waitUntilFinished()
        #expect(grandchild.isFinished && grandchild.outcome?.error == nil)
    }

    @Test("a child that wants exclusive access inside a group that only shares the category is cancelled with an error naming both")
    func cannotUpgrade() {
        let category = unique("database")
        let child = BlockOperation {}
        child.name = "writer"
        child.addExclusivity(category)
        let group = GroupOperation(operations: [child])
        group.name = "readers"
        group.addExclusivity(category, mode: .shared)
        OperationQueue().addOperation(group)
        group.waitUntilFinished()
        guard case .cancelled(let reason?)? = child.outcome, let error = reason as? ExclusivityError else {
            Issue.record("outcome \(String(describing: child.outcome))")
            return
        }
        #expect("\(error)".contains("\"writer\"") && "\(error)".contains("\"readers\"") && "\(error)".contains(category))
        #expect(group.outcome?.error is ExclusivityError)
    }

    @Test("a retry holding a category runs attempts in the same category")
    func retryAttempts() async throws {
        let category = unique("network")
        let retry = RetryOperation<Int>(maximumAttempts: 2) { attempt in
            let operation = ValueBlockOperation<Int> { attempt }
            operation.addExclusivity(category)
            return operation
        }
        retry.addExclusivity(category)
        OperationQueue().addOperation(retry)
        #expect(try await retry.value == 1)
    }

    /// A group holds "a"; an outsider waits for "a" and "b"; the group's child asks for
    /// "b". Queued behind the outsider (first come, first served), which waits for the
    /// group, the child would deadlock: a request from inside an owner that holds
    /// categories looks only at who holds what, not at the line. Forced: the child asks
    /// only once the outsider waits (it depends on a sibling held on a gate until then).
    @Test("a child asking for another category is not queued behind an outsider waiting for its group")
    func childNotBehindOutsider() {
        let a = unique("a"), b = unique("b")
        let outsider = BlockOperation {}
        outsider.addExclusivity(a)
        outsider.addExclusivity(b)
        let outsiderWaits = BlockingSignal()
        let opener = BlockOperation { _ = outsiderWaits.wait(timeout: 600) }
        let child = BlockOperation {}
        child.addExclusivity(b)
        child.addDependency(opener)
        let group = GroupOperation(operations: [opener, child])
        group.addExclusivity(a)
        let queue = OperationQueue()
        queue.addOperation(group)
        #expect(eventually { opener.isExecuting })
        queue.addOperation(outsider)
        #expect(eventually { outsider.waitReasons == [.gate(.exclusivity([a, b].sorted()))] }, "\(outsider.waitReasons)")
        outsiderWaits.open()
        let childRan = eventually { child.isFinished }
        #expect(childRan, "the child waits behind the outsider: \(child.waitDescription)")
        if !childRan { outsider.cancel() }
        queue.waitUntilAllOperationsAreFinished()
        #expect(outsider.isFinished && group.isFinished)
    }
}
