import Foundation
import class Operations.BlockOperation
import class Operations.OperationQueue
import OperationsRecording
import Testing

@Suite("Timeline page")
struct TimelineTests {
    @Test("what was recorded: times, outcomes, dependencies, cancelled before start")
    func recording() {
        let recording = recordSmallScene()
        #expect(recording.operations.count == 8)
        #expect(recording.operations.map(\.name).prefix(3) == ["load 1", "filter 1", "write 1"])
        #expect(recording.operations[2].dependencies == [1])
        #expect(recording.operations[1].dependencies == [0])
        #expect(recording.operations.filter(\.wasCancelledBeforeStart).map(\.name) == ["doomed 1", "doomed 2"])
        #expect(recording.outcomeCounts == ["succeeded": 6, "cancelled": 2])
        #expect(recording.queues.map(\.maxConcurrentOperationCount) == [2])
        #expect(recording.queues[0].mostConcurrent >= 1 && recording.queues[0].mostConcurrent <= 2)
        for operation in recording.operations {
            #expect(operation.finished != nil)
            #expect(operation.enqueued <= operation.finished!)
        }
        #expect(recording.operations[1].started! >= recording.operations[0].finished!)
    }

    @Test("one row per operation: bars, waiting strips, ✕ marks, arrows, a queue header, hover titles")
    func perOperation() throws {
        let page = recordSmallScene().html(notes: ["a note"])
        let svg = SVGElements(page: page)
        try #require(svg.error == nil)
        #expect(svg.count("g", class: "operation") == 8)
        #expect(svg.count("rect", class: "wait") == 8)
        #expect(svg.count("rect", class: "bar") == 6)
        #expect(svg.count("path", class: "cancelled-mark") == 2)
        #expect(svg.count("line", class: "dependency") == 2)
        #expect(svg.count("g", class: "queue") == 1)
        #expect(svg.count("line", class: "limit") == 1)
        #expect(svg.count("text", class: "label") == 8)
        #expect(svg.elements.filter { $0.name == "title" }.count >= 16)
        let outcomes = svg.all("g", class: "operation").compactMap { $0.attributes["data-outcome"] }
        #expect(outcomes.filter { $0 == "cancelled" }.count == 2)
        // Bars are at least 2 px wide; everything placed in time has its times for the script.
        for bar in svg.all("rect", class: "bar") {
            #expect(Double(bar.attributes["width"] ?? "0")! >= 2)
            #expect(bar.attributes["data-t0"] != nil && bar.attributes["data-t1"] != nil)
        }
        let root = try #require(svg.elements.first)
        #expect(root.name == "svg" && root.attributes["width"] == "100%")
        #expect(page.contains("<script>") && page.contains("a note") && page.contains("class=\"legend\""))
        #expect(page.contains("striped = waiting in the queue"))
        #expect(!page.contains("src=\"http") && !page.contains("href=\"http"))
    }

    @Test("above the row limit, one row per group with counts; no bar per operation")
    func grouped() throws {
        let recorder = OperationRecorder(title: "Many")
        let queue = OperationQueue()
        queue.name = "many"
        queue.maxConcurrentOperationCount = 4
        recorder.record(queue)
        var operations: [BlockOperation] = []
        for index in 0..<600 {
            let fetch = BlockOperation {}.named("fetch \(index)")
            let parse = BlockOperation {}.named("parse \(index)")
            parse.addDependency(fetch)
            operations += [fetch, parse]
        }
        queue.addOperations(operations, waitUntilFinished: true)
        let recording = recorder.stop()
        #expect(recording.operations.count == 1_200)
        let svg = SVGElements(page: recording.html(maximumRows: 400))
        try #require(svg.error == nil)
        let groups = svg.all("g", class: "group")
        #expect(groups.count == 2)
        #expect(groups.compactMap { Int($0.attributes["data-count"] ?? "") } == [600, 600])
        #expect(svg.count("rect", class: "bar") == 0)
        #expect(svg.count("path", class: "running-area") == 2)
        #expect(svg.elements.first?.attributes["data-mode"] == "grouped")
    }

    @Test("grouped, queues named alike are one family: one header, one row per kind of operation")
    func queueFamilies() throws {
        let recorder = OperationRecorder(title: "Rows")
        var queues: [OperationQueue] = []
        for index in 0..<30 {
            let queue = OperationQueue()
            queue.name = "row \(index)"
            queue.maxConcurrentOperationCount = 1
            recorder.record(queue)
            queues.append(queue)
        }
        for (index, queue) in queues.enumerated() {
            let stages = ["download", "sepia", "vignette", "write"].map { BlockOperation {}.named("row \(index): \($0)") }
            for (later, earlier) in zip(stages.dropFirst(), stages) { later.addDependency(earlier) }
            queue.addOperations(stages, waitUntilFinished: false)
        }
        for queue in queues { queue.waitUntilAllOperationsAreFinished() }
        let recording = recorder.stop()
        let svg = SVGElements(page: recording.html(maximumRows: 100))
        try #require(svg.error == nil)
        let headers = svg.all("g", class: "queue")
        #expect(headers.count == 1)
        #expect(headers.first?.attributes["data-queue"] == "row # (30 queues)")
        #expect(svg.all("g", class: "group").compactMap { Int($0.attributes["data-count"] ?? "") } == [30, 30, 30, 30])
        // Below the limit: a header per queue and a row per operation.
        let detailed = SVGElements(page: recording.html(maximumRows: 200))
        #expect(detailed.count("g", class: "queue") == 30)
        #expect(detailed.count("g", class: "operation") == 120)
        #expect(detailed.count("line", class: "dependency") == 90)
    }

    @Test("stopping ends the recording: later operations are not in it")
    func stop() {
        let recorder = OperationRecorder(title: "Stop")
        let queue = OperationQueue()
        recorder.record(queue)
        queue.addOperations([BlockOperation {}], waitUntilFinished: true)
        let recording = recorder.stop()
        queue.addOperations([BlockOperation {}], waitUntilFinished: true)
        #expect(recording.operations.count == 1)
        #expect(recording.operations[0].name == "BlockOperation 1")
    }
}
