import Operations
import OperationsComposition
import Testing

private enum Tag {
    @TaskLocal static var value: [String] = []
}

@Suite("Task scopes around async bodies", .timeLimit(.minutes(1)))
struct TaskScopeTests {
    @Test("bodies run inside the queue's scopes, earlier ones outermost; a cancelled scope stops applying")
    func scopes() async throws {
        let queue = OperationQueue()
        let outer = queue.addTaskScope { _, body in await Tag.$value.withValue(Tag.value + ["outer"]) { await body() } }
        let inner = queue.addTaskScope { operation, body in
            await Tag.$value.withValue(Tag.value + ["inner " + (operation.name ?? "?")]) { await body() }
        }
        let first = AsyncBlockOperation { Tag.value }
        first.name = "first"
        queue.addOperation(first)
        #expect(try await first.value == ["outer", "inner first"])
        inner.cancel()
        let second = AsyncBlockOperation { Tag.value }
        queue.addOperation(second)
        #expect(try await second.value == ["outer"])
        outer.cancel()
        let third = AsyncBlockOperation { Tag.value }
        queue.addOperation(third)
        #expect(try await third.value == [])
    }
}
