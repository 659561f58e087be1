import Foundation
import class Operations.BlockOperation
import class Operations.Operation
import class Operations.OperationQueue
import OperationsRecording
import Testing

@Suite("Chrome trace and dependency graph")
struct TraceAndGraphTests {
    @Test("the trace is JSON with a slice per operation that ran and a flow per dependency")
    func trace() throws {
        let json = recordSmallScene().chromeTraceJSON()
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let events = try #require(document["traceEvents"] as? [[String: Any]])
        func phase(_ value: String) -> [[String: Any]] { events.filter { $0["ph"] as? String == value } }
        #expect(phase("X").count == 6)
        #expect(phase("i").count == 2)
        #expect(phase("b").count == phase("e").count)
        let starts = phase("s"), finishes = phase("f")
        #expect(starts.count == 2 && finishes.count == 2)
        #expect(Set(starts.compactMap { $0["id"] as? Int }) == Set(finishes.compactMap { $0["id"] as? Int }))
        #expect(finishes.allSatisfy { $0["bp"] as? String == "e" })
        // Each flow leaves inside its dependency's slice and arrives where its dependent's begins.
        let slices = phase("X")
        for (start, finish) in zip(starts, finishes) {
            let source = slices.first { slice in
                slice["tid"] as? Int == start["tid"] as? Int && (slice["ts"] as! Double) <= (start["ts"] as! Double)
                    && (start["ts"] as! Double) <= (slice["ts"] as! Double) + (slice["dur"] as! Double)
            }
            #expect(source != nil)
            #expect(slices.contains { $0["ts"] as? Double == finish["ts"] as? Double && $0["tid"] as? Int == finish["tid"] as? Int })
        }
        #expect(phase("M").contains { ($0["args"] as? [String: Any])?["name"] as? String == "queue scene" })
    }

    @Test("a dependency across two queues is a flow from one process to the other")
    func crossQueueFlow() throws {
        let recorder = OperationRecorder(title: "Two queues")
        let downloads = OperationQueue(), filters = OperationQueue()
        downloads.name = "downloads"
        filters.name = "filters"
        recorder.record(downloads)
        recorder.record(filters)
        let download = BlockOperation {}.named("download"), filter = BlockOperation {}.named("filter")
        filter.addDependency(download)
        filters.addOperation(filter)
        downloads.addOperation(download)
        filter.waitUntilFinished()
        let recording = recorder.stop()
        #expect(recording.operations.map(\.queue) == ["filters", "downloads"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(recording.chromeTraceJSON().utf8)) as? [String: Any])
        let events = try #require(document["traceEvents"] as? [[String: Any]])
        let start = try #require(events.first { $0["ph"] as? String == "s" })
        let finish = try #require(events.first { $0["ph"] as? String == "f" })
        // Queues are processes in the order recorded: downloads 1, filters 2.
        #expect(start["pid"] as? Int == 1 && finish["pid"] as? Int == 2)
        let processes = events.filter { $0["name"] as? String == "process_name" }.compactMap { ($0["args"] as? [String: Any])?["name"] as? String }
        #expect(processes == ["queue downloads", "queue filters"])
        #expect(recording.graph.edges.map { [$0.dependency, $0.dependent] } == [[1, 0]])
    }

    @Test("a graph of live operations shows each one's state and outcome")
    func liveStates() {
        struct NotNeeded: Error, CustomStringConvertible { var description: String { "not needed" } }
        let queue = OperationQueue()
        let release = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        let running = BlockOperation { started.signal(); release.wait() }.named("running")
        let done = BlockOperation {}.named("done")
        let dropped = BlockOperation {}.named("dropped")
        let waiting = BlockOperation {}.named("waiting")
        waiting.addDependency(running)
        waiting.addDependency(done)
        waiting.addDependency(dropped)
        queue.addOperations([done], waitUntilFinished: true)
        dropped.cancel(with: NotNeeded())
        dropped.start()
        queue.addOperation(running)
        #expect(started.wait(timeout: .now() + 20) == .success)
        let graph = OperationGraph([waiting], title: "Live")
        release.signal()
        #expect(graph.nodes.map(\.name) == ["waiting", "running", "done", "dropped"])
        #expect(graph.nodes.map(\.state) == ["pending", "executing", "finished", "finished"])
        let dot = graph.dot()
        #expect(dot.contains("done\\nfinished · succeeded"))
        #expect(dot.contains("dropped\\nfinished · cancelled: not needed"))
        #expect(dot.contains("running\\nexecuting"))
        #expect(graph.mermaid().contains("n1[\"running<br/>executing\"]:::executing"))
        queue.waitUntilAllOperationsAreFinished()
    }

    @Test("DOT and Mermaid: a node per operation with its state and outcome, an edge per dependency")
    func graph() {
        let graph = recordSmallScene().graph
        #expect(graph.nodes.count == 8 && graph.edges.count == 2)
        #expect(graph.cycles.isEmpty)
        let dot = graph.dot()
        let lines = dot.split(separator: "\n").map(String.init)
        #expect(lines.first == "digraph \"Small scene\" {" && lines.last == "}")
        #expect(lines.filter { $0.hasPrefix("  n") && $0.contains("[label=") }.count == 8)
        #expect(lines.contains("  n0 -> n1;") && lines.contains("  n1 -> n2;"))
        #expect(dot.contains("load 1\\nfinished · succeeded") && dot.contains("doomed 1\\nfinished · cancelled"))
        #expect(!dot.contains("cycle"))
        let mermaid = graph.mermaid().split(separator: "\n").map(String.init)
        #expect(mermaid.first == "flowchart LR")
        #expect(mermaid.filter { $0.contains("-->") }.count == 2)
        #expect(mermaid.contains { $0.hasPrefix("  n7[\"doomed 2<br/>finished · cancelled\"]:::cancelled") })
    }

    @Test("cycles are found and drawn red, in both formats")
    func cycles() {
        let a = BlockOperation {}.named("a"), b = BlockOperation {}.named("b"), c = BlockOperation {}.named("c")
        let d = BlockOperation {}.named("d")
        a.addDependency(b)
        b.addDependency(a)  // closes a cycle (a warning on standard error)
        c.addDependency(a)
        c.addDependency(d)
        let graph = OperationGraph([c])
        #expect(graph.nodes.map(\.name) == ["c", "a", "d", "b"])
        #expect(graph.nodes.map(\.state) == ["pending", "pending", "pending", "pending"])
        #expect(graph.cycles == [[1, 3]])
        #expect(graph.nodes.filter(\.isInCycle).map(\.name) == ["a", "b"])
        #expect(graph.edges.filter(\.isInCycle).count == 2)
        let dot = graph.dot()
        #expect(dot.components(separatedBy: "penwidth=3").count - 1 == 2)
        #expect(dot.components(separatedBy: "label=\"cycle\"").count - 1 == 2)
        let mermaid = graph.mermaid()
        #expect(mermaid.components(separatedBy: "==>|cycle|").count - 1 == 2)
        #expect(mermaid.contains("linkStyle "))
        #expect(mermaid.contains(":::cycle"))
        // Break the cycle (it is also a retain cycle).
        b.removeDependency(a)
    }

    @Test("a chain of 5,000 operations: no recursion in the cycle search")
    func longChain() {
        var previous = BlockOperation {}
        let first = previous
        for _ in 0..<5_000 {
            let next = BlockOperation {}
            next.addDependency(previous)
            previous = next
        }
        let graph = OperationGraph([previous])
        #expect(graph.nodes.count == 5_001)
        #expect(graph.cycles.isEmpty)
        _ = first
    }
}
