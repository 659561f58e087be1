import Foundation
import class Operations.BlockOperation
import class Operations.OperationQueue
@testable import OperationsRecording
import Testing

/// Parts of an operation (a BlockOperation's blocks), timed with `recordPart` and drawn as
/// bars of their own under the operation's row.
@Suite("Timeline parts of an operation")
struct OperationPartTests {
    @Test("blocks that run at once are drawn as overlapping bars under their operation's single bar")
    func overlappingBlocks() throws {
        let recorder = OperationRecorder(title: "Blocks")
        let queue = OperationQueue()
        queue.name = "blocks"
        recorder.record(queue)
        // A rendezvous: no block ends before all three have begun.
        let arrived = DispatchSemaphore(value: 0), released = DispatchSemaphore(value: 0)
        let operation = BlockOperation()
        operation.name = "words"
        for word in ["one", "two", "three"] {
            operation.addExecutionBlock { [unowned operation] in
                recorder.recordPart("block \(word)", of: operation) {
                    arrived.signal()
                    released.wait()
                }
            }
        }
        queue.addOperation(operation)
        for _ in 0..<3 { arrived.wait() }
        for _ in 0..<3 { released.signal() }
        queue.waitUntilAllOperationsAreFinished()
        let recording = recorder.stop()
        let parts = try #require(recording.operations.first?.parts)
        #expect(Set(parts.map(\.name)) == ["block one", "block two", "block three"])
        for part in parts {
            #expect(parts.allSatisfy { part.started <= $0.finished })
        }

        let svg = SVGElements(page: recording.html())
        try #require(svg.error == nil)
        #expect(svg.count("g", class: "operation") == 1)
        #expect(svg.count("rect", class: "bar") == 1)
        #expect(svg.count("g", class: "part") == 3)
        let bars = svg.all("rect", class: "part-bar").map { bar in
            Double(bar.attributes["x"]!)!...(Double(bar.attributes["x"]!)! + Double(bar.attributes["width"]!)!)
        }
        #expect(bars.count == 3)
        for bar in bars { #expect(bars.allSatisfy { $0.overlaps(bar) }) }
        let tops = Set(svg.all("rect", class: "part-bar").map { $0.attributes["y"]! })
        #expect(tops.count == 3, "a row per part")
        #expect(recording.html().contains("parts of the operation above"))
    }
}
