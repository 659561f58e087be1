@testable import Operations
import Testing

/// What a layer keeps with an operation is made only when it keeps something: a start hook
/// or a tap that comes too late leaves the operation as it was (so a `BlockOperation`
/// nobody watches still takes the quiet finish).
@Suite("Layers: state is kept with an operation only when there is something to keep")
struct LayerStateTests {
    struct NullTap: LifecycleTap {
        func deliver(_ event: LifecycleEvent, of operation: Operation) {}
    }

    @Test("a tap added to a finished operation is refused and leaves nothing attached")
    func lateTap() {
        let operation = BlockOperation {}
        operation.start()
        #expect(!operation._hasExtras)
        #expect(!operation._addLifecycleTap(NullTap()))
        #expect(!operation._hasExtras, "a refused tap made the layers' state anyway")
    }

    @Test("a start hook for an operation that finished never runs and leaves nothing attached")
    func lateStartHook() {
        let operation = BlockOperation {}
        operation.start()
        operation._onStart { Issue.record("a start hook ran after the finish") }
        #expect(!operation._hasExtras, "a start hook that will never run made the layers' state anyway")
    }

    @Test("a start hook added while the work runs runs at once and leaves nothing attached")
    func startHookWhileRunning() {
        let ran = Shared(false)
        let attached = Shared(true)
        let operation = BlockOperation()
        operation.addExecutionBlock { [unowned operation] in
            operation._onStart { ran.update { $0 = true } }
            attached.update { $0 = operation._hasExtras }
        }
        operation.start()
        #expect(ran())
        #expect(!attached(), "a start hook run at once made the layers' state anyway")
    }
}
