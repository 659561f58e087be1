@testable import Operations
@testable import OperationsComposition
import Testing

/// The pure state machine behind `addExclusivity`: grants in arrival order, all
/// categories at once, readers together, writers alone.
@Suite("Exclusivity state machine")
struct ExclusivityStateTests {
    private func names(_ passes: [GatePass]) -> [String] { passes.map { $0.operation.name ?? "?" } }

    private func ticket(_ name: String) -> GatePass {
        let operation = Operation()
        operation.name = name
        return GatePass(operation: operation, round: 0, index: 0)
    }

    @Test("exclusive requests are granted one at a time, first come first served")
    func fifo() {
        var state = ExclusivityState()
        let (a, grantedA) = state.request([("x", .exclusive)], pass: ticket("a"))
        let (b, grantedB) = state.request([("x", .exclusive)], pass: ticket("b"))
        let (_, grantedC) = state.request([("x", .exclusive)], pass: ticket("c"))
        #expect(names(grantedA) == ["a"])
        #expect(grantedB.isEmpty && grantedC.isEmpty)
        #expect(names(state.release(a)) == ["b"])
        #expect(names(state.release(b)) == ["c"])
    }

    @Test("readers share; a waiting writer is not overtaken by later readers")
    func readersWriters() {
        var state = ExclusivityState()
        let (r1, g1) = state.request([("db", .shared)], pass: ticket("r1"))
        let (r2, g2) = state.request([("db", .shared)], pass: ticket("r2"))
        let (w, gw) = state.request([("db", .exclusive)], pass: ticket("w"))
        let (_, gr3) = state.request([("db", .shared)], pass: ticket("r3"))
        #expect(names(g1 + g2) == ["r1", "r2"])
        #expect(gw.isEmpty && gr3.isEmpty)
        #expect(state.release(r1).isEmpty)
        #expect(names(state.release(r2)) == ["w"])
        #expect(names(state.release(w)) == ["r3"])
    }

    @Test("several categories are taken all at once or not at all")
    func allAtOnce() {
        var state = ExclusivityState()
        let (x, _) = state.request([("x", .exclusive)], pass: ticket("holds x"))
        let (_, both) = state.request([("x", .exclusive), ("y", .exclusive)], pass: ticket("x and y"))
        #expect(both.isEmpty)
        // y alone is free, but the request behind "x and y" in y waits its turn (FIFO).
        let (_, onlyY) = state.request([("y", .exclusive)], pass: ticket("y"))
        #expect(onlyY.isEmpty)
        #expect(state.holdings["y"] == nil)
        #expect(names(state.release(x)) == ["x and y"])
    }

    @Test("a waiting request that leaves the line lets the next one through")
    func leaving() {
        var state = ExclusivityState()
        let (held, _) = state.request([("x", .exclusive)], pass: ticket("held"))
        let (waiting, _) = state.request([("x", .exclusive)], pass: ticket("waiting"))
        _ = state.request([("x", .exclusive)], pass: ticket("next"))
        #expect(state.release(waiting).isEmpty)
        #expect(names(state.release(held)) == ["next"])
        #expect(state.release(999).isEmpty)
    }

    @Test("a long line is drained in order")
    func longLine() {
        var state = ExclusivityState()
        var ids: [UInt64] = []
        var order: [String] = []
        for index in 0..<500 {
            let (id, granted) = state.request([("x", .exclusive)], pass: ticket("\(index)"))
            ids.append(id)
            order += names(granted)
        }
        for id in ids { order += names(state.release(id)) }
        #expect(order == (0..<500).map(String.init))
        #expect(state.waiting.isEmpty && state.holdings.isEmpty)
    }

    @Test("a request that may not take its categories when its turn comes is passed over, keeps its place, and goes before later ones once resumed")
    func deferred() {
        var state = ExclusivityState()
        let mayNotTake: (String) -> ExclusivityState.MayTake = { name in { _, pass in pass.operation.name != name } }
        let (held, _) = state.request([("x", .exclusive)], pass: ticket("held"))
        let (passedOver, _) = state.request([("x", .exclusive)], pass: ticket("passed over"))
        let (next, _) = state.request([("x", .exclusive)], pass: ticket("next"))
        #expect(names(state.release(held, mayTake: mayNotTake("passed over"))) == ["next"])
        _ = state.request([("x", .exclusive)], pass: ticket("later"))
        #expect(state.resume(passedOver).isEmpty, "granted while the category is held")
        #expect(names(state.release(next)) == ["passed over"], "a later request overtook the resumed one")
        #expect(names(state.release(passedOver)) == ["later"])
    }

    @Test("a request passed over in one category no longer holds up the lines of its other categories")
    func deferredAcrossLines() {
        var state = ExclusivityState()
        let (held, _) = state.request([("x", .exclusive)], pass: ticket("held"))
        let (both, _) = state.request([("x", .exclusive), ("y", .exclusive)], pass: ticket("x and y"))
        // y is free, but waits behind "x and y" (FIFO).
        let (_, onlyY) = state.request([("y", .exclusive)], pass: ticket("y"))
        #expect(onlyY.isEmpty)
        #expect(names(state.release(held, mayTake: { _, pass in pass.operation.name != "x and y" })) == ["y"])
        // A request arriving while the first in line is deferred is not held up by it either.
        let (_, onlyX) = state.request([("x", .exclusive)], pass: ticket("x"))
        #expect(names(onlyX) == ["x"])
        #expect(state.resume(both).isEmpty)
        #expect(state.resume(both).isEmpty, "resuming twice is harmless")
    }
}
