import CofferCrypto
import Foundation
import Testing

@testable import CofferStateMachines
@testable import CofferWallet

/// Aries messages as an agent receives them (attachments base64, as agents send them).
enum Messages {
    static func base64(_ json: String) -> String { Data(json.utf8).base64EncodedString() }

    static let offer = """
        {"@type": "https://didcomm.org/issue-credential/1.0/offer-credential", "@id": "o1",
         "credential_preview": {"@type": "https://didcomm.org/issue-credential/1.0/credential-preview",
           "attributes": [{"name": "name", "value": "Alice"}, {"name": "degree", "value": "MSc"}]},
         "offers~attach": [{"@id": "libindy-cred-offer-0", "mime-type": "application/json",
           "data": {"base64": "\(base64(#"{"schema_id":"V4SG:2:degree:1.0","cred_def_id":"V4SG:3:CL:12:tag","nonce":"1"}"#))"}}]}
        """

    static let credential = """
        {"@type": "https://didcomm.org/issue-credential/1.0/issue-credential", "@id": "c1",
         "credentials~attach": [{"@id": "libindy-cred-0", "mime-type": "application/json",
           "data": {"base64": "\(base64(#"{"schema_id":"V4SG:2:degree:1.0","cred_def_id":"V4SG:3:CL:12:tag","values":{"name":{"raw":"Alice","encoded":"1"},"degree":{"raw":"MSc","encoded":"2"}},"signature":{"p_credential":{"m_2":"9"}}}"#))"}}]}
        """

    static let credentialProblem = #"{"@type": "https://didcomm.org/issue-credential/1.0/problem_report", "description": {"code": "x"}}"#

    static let request = """
        {"@type": "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/present-proof/1.0/request-presentation", "@id": "r1",
         "request_presentations~attach": [{"@id": "libindy-request-presentation-0", "mime-type": "application/json",
           "data": {"base64": "\(base64(#"{"name":"degree check","nonce":"1","version":"1.0","requested_attributes":{"r1":{"name":"name","restrictions":[{"schema_id":"V4SG:2:degree:1.0"}]}},"requested_predicates":{}}"#))"}}]}
        """

    static let ack = #"{"@type": "https://didcomm.org/present-proof/1.0/ack", "status": "OK"}"#
    static let proofProblem = #"{"@type": "https://didcomm.org/present-proof/1.0/problem-report"}"#

    static func response(signer: String) -> String {
        #"{"@type": "https://didcomm.org/connections/1.0/response", "connection~sig": {"signer": "\#(signer)", "signature": "x", "sig_data": "y"}}"#
    }
}

@Suite("Message-driven machines")
struct MessageTests {
    @Test("a credential machine made from the offer message holds the offer's ids and preview")
    func createFromOffer() async throws {
        let (sm, _, _) = try await makeMachines()
        let h = try sm.credentialCreate(offerMessage: Messages.offer)
        let m = try credentialMachine(sm, h)
        #expect(m.offer.schemaID == "V4SG:2:degree:1.0" && m.offer.credentialDefinitionID == "V4SG:3:CL:12:tag")
        #expect(m.offer.issuerDID == "V4SG" && m.offer.attributes == ["name": "Alice", "degree": "MSc"])
        #expect(try sm.state(h) == 3)
    }

    @Test("the issue-credential message moves request sent to received and stores its signature in the wallet")
    func credentialMessage() async throws {
        let (sm, _, wallet) = try await makeMachines()
        let h = try sm.credentialCreate(offerMessage: Messages.offer)
        _ = try await sm.credentialSendRequest(h)
        let t = try await sm.update(h, message: Messages.credential)
        #expect(t.to == 4 && t.mustSave)
        #expect(try sm.credentialState(h) == .credentialReceived)
        let id = try credentialMachine(sm, h).id
        #expect(try await wallet.hasCredentialSignature(credentialID: id))
        #expect(try credentialMachine(sm, h).received == ["name": "Alice", "degree": "MSc"])
    }

    @Test("a message out of order is an invalid transition and changes nothing")
    func outOfOrder() async throws {
        let (sm, _, wallet) = try await makeMachines()
        let h = try sm.credentialCreate(offerMessage: Messages.offer)
        let before = try sm.serialize(h)
        await #expect(throws: StateMachineError.invalidTransition(kind: .credential, operation: "receiveCredential", state: 3)) {
            _ = try await sm.update(h, message: Messages.credential)
        }
        #expect(try sm.serialize(h) == before)
        let id = try credentialMachine(sm, h).id
        #expect(try await wallet.hasCredentialSignature(credentialID: id) == false)
    }

    @Test("an unknown message type is a clear error naming it, and changes nothing")
    func unknownType() async throws {
        let (sm, _, _) = try await makeMachines()
        let h = try sm.credentialCreate(offerMessage: Messages.offer)
        let before = try sm.serialize(h)
        await #expect {
            _ = try await sm.update(h, message: #"{"@type": "https://didcomm.org/basicmessage/1.0/message"}"#)
        } throws: { error in
            "\(error)".contains("unknown message type \"https://didcomm.org/basicmessage/1.0/message\"")
        }
        #expect(try sm.serialize(h) == before)
    }

    @Test("text that is not a message, a message without @type and a message for another kind are refused")
    func notAMessage() async throws {
        let (sm, _, _) = try await makeMachines()
        let h = try sm.credentialCreate(offerMessage: Messages.offer)
        let before = try sm.serialize(h)
        for bad in ["{not json", "[1]", #"{"@id": "x"}"#, Messages.ack, Messages.offer] {
            await #expect(throws: StateMachineError.self) { _ = try await sm.update(h, message: bad) }
        }
        #expect(throws: StateMachineError.self) { _ = try sm.credentialCreate(offerMessage: Messages.request) }
        #expect(try sm.serialize(h) == before)
    }

    @Test("the issuer's problem report ends the exchange without sending anything")
    func credentialProblemReport() async throws {
        let (sm, messenger, _) = try await makeMachines()
        let h = try sm.credentialCreate(offerMessage: Messages.offer)
        _ = try await sm.credentialSendRequest(h)
        let sent = messenger.sent.count
        _ = try await sm.update(h, message: Messages.credentialProblem)
        #expect(try sm.credentialState(h) == .rejected)
        #expect(messenger.sent.count == sent)
    }

    @Test("a proof machine made from the request message is driven to acknowledged by the ack message")
    func proofByMessages() async throws {
        let (sm, _, _) = try await makeMachines()
        let c = try sm.credentialCreate(offerMessage: Messages.offer)
        _ = try await sm.credentialSendRequest(c)
        _ = try await sm.update(c, message: Messages.credential)
        _ = try await sm.credentialAccept(c)
        let p = try sm.proofCreate(requestMessage: Messages.request)
        let matches = try await sm.proofMatchingCredentials(p)
        #expect(matches == ["r1": [try credentialMachine(sm, c).id]])
        await #expect(throws: StateMachineError.self) { _ = try await sm.update(p, message: Messages.ack) }
        _ = try await sm.proofSendPresentation(p, credentials: ["r1": try credentialMachine(sm, c).id])
        let t = try await sm.update(p, message: Messages.ack)
        #expect(t.to == 4)
        #expect(try sm.disclosedProofState(p) == .acknowledged)
    }

    @Test("the verifier's problem report ends a sent presentation")
    func proofProblemReport() async throws {
        let (sm, _, _) = try await makeMachines()
        let p = try sm.proofCreate(requestMessage: Messages.request)
        await #expect(throws: StateMachineError.self) { _ = try await sm.update(p, message: Messages.proofProblem) }
        #expect(try sm.disclosedProofState(p) == .requestReceived)
    }

    @Test("the connection response message records the inviter's key")
    func connectionResponse() async throws {
        let (sm, _, wallet) = try await makeMachines()
        let h = sm.connectionCreate(invitation: "i")
        _ = try await sm.connectionSendRequest(h)
        let their = try await wallet.createKey()
        _ = try await sm.update(h, message: Messages.response(signer: their))
        #expect(try sm.connectionState(h) == .responded)
        guard case .connection(let m) = try sm.table.machine(h) else { throw StateMachineError.unknownHandle(h) }
        #expect(m.theirVerkey == their)
    }
}
