// The README's durable block (with the SQLite trait).
#if SQLite

import OperationsDurable
import OperationsSQLite

func readmeDurableExample() async throws {
struct Thumbnail: DurableOperation {              // input and output are Codable: they are stored
    static let kind = "thumbnail"
    func run(_ path: String, context: DurableContext) async throws -> String { path + ".thumbnail.png" }
}

let store = SQLiteOperationStore(path: "pipeline.sqlite")   // or PostgresOperationStore
try await store.migrate()
let queue = DurableQueue(name: "images", store: store)
let thumbnail = try await queue.add(Thumbnail.self, input: "cat.png")
print(try await thumbnail.value)                  // once a worker, in any process, ran it

// In every worker process: returns after SIGTERM or SIGINT, once what ran is given back.
try await DurableWorker(store: store, queues: ["images"], kinds: [Thumbnail()]).run()
}
#endif
