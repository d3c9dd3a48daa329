def test_seed_answer_streams_exactly(live_server, chat_factory, seed_answers):
    chat = chat_factory(live_server)
    seed = seed_answers["improvisation"]
    result = chat.send(seed["question"], "r1")
    assert result.status == 200
    assert result.kinds[0] == "message.started" and result.kinds[-1] == "message.completed"
    assert result.text == seed["answer"]
