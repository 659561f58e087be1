import Operations
import OperationsComposition
import Testing
import TestTraits

/// An observer of its target's `isFinished` that removes itself in its deinit.
private final class SelfRemovingWatcher: NSObject, @unchecked Sendable {
    let target: Operation
    init(target: Operation) {
        self.target = target
        super.init()
        target.addObserver(self, forKeyPath: "isFinished", options: [.new], context: nil)
    }
    deinit { target.removeObserver(self, forKeyPath: "isFinished") }
}

@Suite("Observers removed inside deinit")
struct ObservationDeinitRemovalTests {
    @Test("an object that observes itself removes the observation in its own deinit", .oneExitTestAtATime)
    func observedRemovesInDeinit() async {
        await #expect(processExitsWith: .success) {
            final class SelfObserving: Operation, @unchecked Sendable {
                override init() {
                    super.init()
                    addObserver(self, forKeyPath: "isFinished", options: [.new], context: nil)
                }
                deinit { removeObserver(self, forKeyPath: "isFinished") }
            }
            var operation: SelfObserving? = SelfObserving()
            operation!.start()
            operation = nil
        }
    }

    @Test("an observer removes itself in its deinit", .oneExitTestAtATime)
    func observerRemovesItselfInDeinit() async {
        await #expect(processExitsWith: .success) {
            let operation = Operation()
            var watcher: SelfRemovingWatcher? = SelfRemovingWatcher(target: operation)
            _ = watcher
            watcher = nil
            operation.start()
        }
    }

    @Test("after removal in deinit the registration is gone and others still hear")
    func removalInDeinitKeepsOthers() {
        let operation = Operation()
        let other = StateObserver()
        operation.addObserver(other, forKeyPath: "isFinished", options: [.new], context: nil)
        var watcher: SelfRemovingWatcher? = SelfRemovingWatcher(target: operation)
        _ = watcher
        watcher = nil
        operation.start()
        #expect(other.values(for: "isFinished") == ["true"])
        operation.removeObserver(other, forKeyPath: "isFinished")
    }
}

@Suite("Old values of key-value observing, per thread")
struct ObservationPerThreadTests {
    /// Renames an operation from `a0` to `a1` on thread A and from `b0` to `b1` on thread B
    /// (which starts once A has announced `willChange`), each inside a `willChange`/`didChange`
    /// pair, and checks that each `didChange` reported the old value its own `willChange` read.
    /// `onPrior` runs for each prior notification with its old value (after A's has let B
    /// start); `afterA` and `afterB` run after each thread's `didChange`.
    private func checkOldValuesOfPairsOnTwoThreads(
        onPrior: @escaping @Sendable (String) -> Void, afterA: @escaping @Sendable () -> Void = {},
        afterB: @escaping @Sendable () -> Void = {}
    ) {
        let operation = Operation()
        operation.name = "a0"
        let aWilled = BlockingSignal(), aDone = BlockingSignal(), bDone = BlockingSignal()
        let results = Shared<[String: String]>([:])
        let observer = CallbackObserver { _, change in
            let old = change[.oldKey].map { "\($0)" } ?? "nil"
            if change[.notificationIsPriorKey] as? Bool == true {
                if old == "a0" { aWilled.open() }
                onPrior(old)
            } else {
                let new = change[.newKey].map { "\($0)" } ?? "nil"
                results.update { $0[new] = old }
            }
        }
        operation.addObserver(observer, forKeyPath: "name", options: [.old, .new, .prior], context: nil)
        /// On a thread of its own: `before`, then the rename to `newName` inside a
        /// `willChange`/`didChange` pair, then `after`; opens `done` at the end.
        func renameInAPair(
            to newName: String, before: @escaping @Sendable () -> Void = {}, after: @escaping @Sendable () -> Void,
            done: BlockingSignal
        ) {
            Thread {
                before()
                operation.willChangeValue(forKey: "name")
                operation.name = newName
                operation.didChangeValue(forKey: "name")
                after()
                done.open()
            }.start()
        }
        renameInAPair(to: "a1", after: afterA, done: aDone)
        renameInAPair(
            to: "b1",
            before: {
                #expect(aWilled.wait())
                operation.name = "b0"
            },
            after: afterB, done: bDone)
        #expect(aDone.wait())
        #expect(bDone.wait())
        #expect(results() == ["a1": "a0", "b1": "b0"])
        operation.removeObserver(observer, forKeyPath: "name")
    }

    /// Thread A announces `willChange`, then B does; A's `didChange` comes first, then B's.
    /// Each `didChange` must report the old value its own `willChange` read.
    @Test("crossing will/did pairs on one key from two threads keep their own old values")
    func crossingPairs() {
        let bWilled = BlockingSignal(), aDid = BlockingSignal()
        checkOldValuesOfPairsOnTwoThreads(
            onPrior: { old in
                if old == "a0" { #expect(bWilled.wait()) }
                if old == "b0" { bWilled.open(); #expect(aDid.wait()) }
            },
            afterA: { aDid.open() })
    }

    /// Thread A announces `willChange`; B announces a whole pair; then A's `didChange`.
    @Test("a pair from another thread nested inside a pending one")
    func nestedPair() {
        let bDid = BlockingSignal()
        checkOldValuesOfPairsOnTwoThreads(
            onPrior: { old in
                if old == "a0" { #expect(bDid.wait()) }
            },
            afterB: { bDid.open() })
    }

    /// `start()`: the phase changes after `willChange("isExecuting")`, so the first change
    /// reads old = false, new = true (not old = true). Forced: no race; an observer with
    /// `.old`/`.new` of `isExecuting`.
    @Test("start() reports isExecuting false → true, then true → false")
    func startOldValues() {
        let operation = BlockOperation {}
        let observer = StateObserver()
        operation.addObserver(observer, forKeyPath: "isExecuting", options: [.old, .new, .prior], context: nil)
        operation.start()
        let events = observer.events().filter { $0.keyPath == "isExecuting" }
        #expect(events.filter { !$0.prior }.map { "\($0.old ?? "nil") → \($0.new ?? "nil")" } == ["false → true", "true → false"])
        #expect(events.filter(\.prior).map { $0.old ?? "nil" } == ["false", "true"], "prior notifications carry the old value")
        operation.removeObserver(observer, forKeyPath: "isExecuting")
    }

    /// `addDependency`: the count rises after `willChange("isReady")`, so adding an
    /// unfinished dependency reads old = true, new = false (not old = false). Forced: no
    /// race; an observer with `.old`/`.new` of `isReady`.
    @Test("addDependency reports isReady true → false; the dependency's finish false → true")
    func addDependencyOldValues() {
        let operation = BlockOperation {}
        let dependency = BlockOperation {}
        let observer = StateObserver()
        operation.addObserver(observer, forKeyPath: "isReady", options: [.old, .new], context: nil)
        operation.addDependency(dependency)
        dependency.start()
        let changes = observer.events().filter { $0.keyPath == "isReady" && !$0.prior }.map { "\($0.old ?? "nil") → \($0.new ?? "nil")" }
        #expect(changes == ["true → false", "false → true"])
        operation.removeObserver(observer, forKeyPath: "isReady")
    }
}
