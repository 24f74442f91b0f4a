//! Checks of messages and generations: one at a time, finishing, failing, interruption and runners.

use super::*;

pub async fn messages_read_back_unchanged_in_sequence_order(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let other = f.chat(&acme, "alice").await;

    let first = rich_turn(&chat, 0);
    f.finish(&chat, &first, at(20)).await;
    assert_eq!(f.messages(&chat).await, first);

    let second = vec![
        message(&chat, 10, Role::User, "Danke!"),
        Message {
            usage: Some(usage(5, 6, 0, FinishReason::Stop)),
            ..message(&chat, 11, Role::Assistant, "Gern geschehen.")
        },
    ];
    f.finish(&chat, &second, at(21)).await;
    assert_eq!(f.messages(&chat).await, [first, second].concat());

    // Another chat numbers its messages from 0 too.
    let theirs = vec![message(&other, 0, Role::User, "hello")];
    f.finish(&other, &theirs, at(22)).await;
    assert_eq!(f.messages(&other).await, theirs);
    assert_eq!(f.messages(&chat).await.len(), 12);
}

pub async fn messages_of_one_turn_come_back_in_sequence_order(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let turn = rich_turn(&chat, 0);
    let mut shuffled = turn.clone();
    shuffled.reverse();
    shuffled.swap(0, 4);
    f.finish(&chat, &shuffled, at(20)).await;
    assert_eq!(f.messages(&chat).await, turn);
}

pub async fn one_generation_runs_at_a_time(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let untouched = f.chat(&acme, "alice").await;

    assert!(f.begin(&chat, at(10)).await);
    let generating = Chat {
        status: Some(ChatStatus::Generating),
        updated_at: at(10),
        ..chat.clone()
    };
    assert_eq!(f.get(&chat).await, Some(generating.clone()));
    assert!(!f.begin(&chat, at(11)).await, "already generating");
    assert_eq!(
        f.get(&chat).await,
        Some(generating),
        "a refused start changes nothing"
    );

    f.finish(&chat, &[], at(12)).await;
    assert!(f.begin(&chat, at(13)).await, "finished: may start again");

    // A failed generation may be retried; the new start clears the error.
    f.store
        .fail_generation(&acme, &chat.id, "boom", None, at(14))
        .await
        .unwrap();
    assert!(f.begin(&chat, at(15)).await);
    let retried = f.get(&chat).await.unwrap();
    assert_eq!(retried.status, Some(ChatStatus::Generating));
    assert_eq!(retried.error, None);
    assert_eq!(retried.updated_at, at(15));

    // Deleted chats and unknown ones never start.
    let deleted = f.deleted_chat(&acme, "alice").await;
    assert!(!f.begin(&deleted, at(16)).await);
    assert_eq!(f.get(&deleted).await, Some(deleted.clone()));
    let unknown = chat_of(&acme);
    assert!(!f.begin(&unknown, at(16)).await);
    assert_eq!(f.get(&unknown).await, None);

    assert_eq!(f.get(&untouched).await, Some(untouched));
}

pub async fn finishing_appends_messages_and_clears_the_status(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    f.store
        .fail_generation(&acme, &chat.id, "old failure", None, at(5))
        .await
        .unwrap();
    assert!(f.begin(&chat, at(10)).await);
    let turn = rich_turn(&chat, 0);
    f.finish(&chat, &turn, at(20)).await;
    assert_eq!(
        f.get(&chat).await,
        Some(Chat {
            status: None,
            error: None,
            updated_at: at(20),
            ..chat.clone()
        })
    );
    assert_eq!(f.messages(&chat).await, turn);

    // Finishing also clears a failure (whatever the status was).
    f.store
        .fail_generation(&acme, &chat.id, "late failure", None, at(21))
        .await
        .unwrap();
    f.finish(&chat, &[], at(22)).await;
    let idle = f.get(&chat).await.unwrap();
    assert_eq!(
        (idle.status, idle.error, idle.updated_at),
        (None, None, at(22))
    );

    let unknown = chat_of(&acme);
    let finished = f
        .store
        .finish_generation(&acme, &unknown.id, &turn_of(&unknown, &[], at(23)), at(23))
        .await;
    assert!(is_not_found(&finished), "{finished:?}");
}

pub async fn a_taken_sequence_number_rolls_the_whole_finish_back(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    assert!(f.begin(&chat, at(10)).await);
    let first = vec![
        message(&chat, 0, Role::User, "one"),
        message(&chat, 1, Role::Assistant, "two"),
    ];
    f.finish(&chat, &first, at(11)).await;
    assert!(f.begin(&chat, at(12)).await);
    let generating = f.get(&chat).await.unwrap();
    let recorded = f.recorded_usage().await;
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].message_id, first[1].id.to_string());

    // The new messages come first, the taken number last: nothing of the batch stays.
    let colliding = vec![
        message(&chat, 2, Role::User, "three"),
        message(&chat, 3, Role::Assistant, "four"),
        message(&chat, 1, Role::Assistant, "taken"),
    ];
    let refused = f
        .store
        .finish_generation(&acme, &chat.id, &turn_of(&chat, &colliding, at(13)), at(13))
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(f.messages(&chat).await, first, "no new messages");
    assert_eq!(
        f.get(&chat).await,
        Some(generating.clone()),
        "status and time unchanged"
    );
    assert_eq!(f.recorded_usage().await, recorded, "no usage recorded");

    // A message id that is taken is refused the same way.
    let reused = vec![
        message(&chat, 2, Role::User, "three"),
        Message {
            id: first[0].id.clone(),
            ..message(&chat, 3, Role::Assistant, "four")
        },
    ];
    let refused = f
        .store
        .finish_generation(&acme, &chat.id, &turn_of(&chat, &reused, at(14)), at(14))
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(f.messages(&chat).await, first);
    assert_eq!(f.get(&chat).await, Some(generating));
    assert_eq!(f.recorded_usage().await, recorded);

    // The generation can still finish properly.
    let next = vec![message(&chat, 2, Role::User, "three")];
    f.finish(&chat, &next, at(15)).await;
    assert_eq!(f.messages(&chat).await, [first, next].concat());
    assert_eq!(f.get(&chat).await.unwrap().status, None);
    assert_eq!(f.recorded_usage().await.len(), 2);
}

pub async fn failing_records_the_error(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let untouched = f.chat(&acme, "alice").await;
    f.finish(&chat, &[message(&chat, 0, Role::User, "hi")], at(5))
        .await;
    let before = f.messages(&chat).await;
    assert!(f.begin(&chat, at(10)).await);
    f.store
        .fail_generation(&acme, &chat.id, "provider said 500 – 错误", None, at(11))
        .await
        .unwrap();
    assert_eq!(
        f.get(&chat).await,
        Some(Chat {
            status: Some(ChatStatus::Error),
            error: Some("provider said 500 – 错误".to_owned()),
            updated_at: at(11),
            ..chat.clone()
        })
    );
    assert_eq!(f.messages(&chat).await, before, "nothing is appended");
    assert_eq!(
        f.recorded_usage().await.len(),
        1,
        "only the first turn's usage"
    );

    // A later failure replaces the reason.
    f.store
        .fail_generation(&acme, &chat.id, "again", None, at(12))
        .await
        .unwrap();
    assert_eq!(f.get(&chat).await.unwrap().error.as_deref(), Some("again"));

    let failed = f
        .store
        .fail_generation(&acme, &ChatId::generate(), "nobody", None, at(13))
        .await;
    assert!(is_not_found(&failed), "{failed:?}");
    assert_eq!(f.get(&untouched).await, Some(untouched));
}

pub async fn a_failed_turn_keeps_its_partial_answer_and_its_route(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    assert!(f.begin(&chat, at(10)).await);
    let route = Route {
        deployment: "backup".into(),
        provider: "azure".into(),
        failed_attempts: vec![FailedAttempt {
            deployment: "primary".into(),
            error: "the model provider failed: HTTP 500".into(),
        }],
    };
    // What guardrails did is stored with the answer: rules, effects and counts only.
    let guardrails = serde_json::from_value(serde_json::json!([
        {"rule": "emails", "kind": "email", "direction": "input", "effect": "pseudonymised", "count": 2},
        {"rule": "hook", "kind": "hook", "direction": "output", "effect": "passed", "count": 1,
         "hookFailure": "timeout"},
    ]))
    .expect("a guardrail record");
    let partial = Message {
        usage: Some(MessageUsage {
            route: Some(route),
            guardrails,
            ..usage(7, 1, 0, FinishReason::Other("error".into()))
        }),
        ..message(&chat, 1, Role::Assistant, "Hel")
    };
    let messages = vec![message(&chat, 0, Role::User, "Say hello"), partial];
    let failed = FinishedTurn {
        error: Some("the model provider did not answer in time".into()),
        ..turn_of(&chat, &messages, at(11))
    };
    f.finish_turn(&chat, &failed, at(11)).await;
    assert_eq!(
        f.get(&chat).await,
        Some(Chat {
            status: Some(ChatStatus::Error),
            error: failed.error.clone(),
            updated_at: at(11),
            ..chat.clone()
        })
    );
    assert_eq!(
        f.messages(&chat).await,
        messages,
        "the partial answer reads back"
    );
    assert_eq!(f.recorded_usage().await.len(), 1);
    // The chat can go on.
    assert!(f.begin(&chat, at(12)).await);
}

pub async fn interrupted_generations_fail_in_every_organization(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    // `f.store` is the process that stops: it last renewed its lease at 5 s.
    f.store.keep_alive(at(5)).await.unwrap();
    let mut running = Vec::new();
    for organization in [&acme, &acme, &globex] {
        let chat = f.chat(organization, "alice").await;
        assert!(f.begin(&chat, at(10)).await);
        running.push(chat);
    }
    // A new chat stored generating, and one deleted while it generates: both recovered.
    for deleted_at in [None, Some(at(9))] {
        let generating = Chat {
            status: Some(ChatStatus::Generating),
            deleted_at,
            ..chat(&globex, "bob")
        };
        f.store.insert(&generating).await.unwrap();
        running.push(generating);
    }

    let idle = f.chat(&acme, "alice").await;
    let failed = f.chat(&globex, "alice").await;
    f.store
        .fail_generation(&globex, &failed.id, "earlier", None, at(11))
        .await
        .unwrap();
    let failed = f.get(&failed).await.unwrap();
    let deleted = f.deleted_chat(&acme, "alice").await;

    // A replica that is alive, generating, and the replica that sweeps, with a generation
    // of its own whose lease it never renewed.
    let live = f.another_runner();
    live.keep_alive(at(15)).await.unwrap();
    let live_chat = f.chat(&acme, "carol").await;
    assert!(
        live.begin_generation(&acme, &live_chat.id, at(16))
            .await
            .unwrap()
    );
    let sweeper = f.another_runner();
    let own_chat = f.chat(&globex, "dave").await;
    assert!(
        sweeper
            .begin_generation(&globex, &own_chat.id, at(16))
            .await
            .unwrap()
    );

    assert_eq!(
        sweeper
            .fail_interrupted("early", at(5), at(19))
            .await
            .unwrap(),
        0,
        "a lease renewed at the limit has not lapsed"
    );
    assert_eq!(
        sweeper
            .fail_interrupted("interrupted by a restart", at(12), at(20))
            .await
            .unwrap(),
        running.len() as u64
    );
    for chat in &running {
        let now = f.get(chat).await.unwrap();
        assert_eq!(now.status, Some(ChatStatus::Error), "{}", chat.id);
        assert_eq!(now.error.as_deref(), Some("interrupted by a restart"));
        assert_eq!(now.updated_at, at(20));
        assert_eq!(now.deleted_at, chat.deleted_at);
    }
    for chat in [&live_chat, &own_chat] {
        let now = f.get(chat).await.unwrap();
        assert_eq!(now.status, Some(ChatStatus::Generating), "{}", chat.owner);
    }
    assert_eq!(f.get(&idle).await, Some(idle));
    assert_eq!(f.get(&failed).await, Some(failed));
    assert_eq!(f.get(&deleted).await, Some(deleted));

    assert_eq!(
        sweeper
            .fail_interrupted("again", at(12), at(21))
            .await
            .unwrap(),
        0
    );
    assert!(
        f.begin(&running[0], at(22)).await,
        "recovered chats can start"
    );

    // A generation's end ends its lease: once every other runner has lapsed, only the
    // generation that is still running fails.
    live.fail_generation(&acme, &live_chat.id, "upstream", None, at(23))
        .await
        .unwrap();
    assert_eq!(
        sweeper
            .fail_interrupted("later", at(100), at(101))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        f.get(&running[0]).await.unwrap().error.as_deref(),
        Some("later")
    );
    assert_eq!(
        f.get(&live_chat).await.unwrap().error.as_deref(),
        Some("upstream")
    );
    assert_eq!(
        f.get(&own_chat).await.unwrap().status,
        Some(ChatStatus::Generating),
        "a runner never fails its own generations"
    );

    // A runner that never renewed its lease (the sweeper above; and one that writes a lease
    // now) is lapsed for a process's first sweep.
    let silent = f.another_runner();
    let silent_chat = f.chat(&acme, "erin").await;
    assert!(
        silent
            .begin_generation(&acme, &silent_chat.id, at(102))
            .await
            .unwrap()
    );
    assert_eq!(
        f.another_runner()
            .fail_interrupted("never renewed", at(100), at(103))
            .await
            .unwrap(),
        2
    );
    for chat in [&own_chat, &silent_chat] {
        let now = f.get(chat).await.unwrap();
        assert_eq!(now.status, Some(ChatStatus::Error), "{}", chat.owner);
        assert_eq!(now.error.as_deref(), Some("never renewed"));
    }
}

/// A process that stops cleanly retires its runner: forgotten once its generations have
/// ended, kept while it holds one (which then fails when its lease lapses, as after a crash).
pub async fn a_runner_retires_only_without_generations(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    // A replica whose first sweep (which adopts the leases of runners with no row) is done.
    let sweeper = f.another_runner();
    assert_eq!(
        sweeper
            .fail_interrupted("lapsed", at(0), at(1))
            .await
            .unwrap(),
        0
    );
    assert!(
        !f.store.retire().await.unwrap(),
        "a runner that never renewed has nothing to forget"
    );

    f.store.keep_alive(at(5)).await.unwrap();
    let chat = f.chat(&acme, "alice").await;
    assert!(f.begin(&chat, at(6)).await);
    assert!(
        !f.store.retire().await.unwrap(),
        "a runner holding a generation is kept"
    );
    f.finish(&chat, &[message(&chat, 0, Role::User, "hi")], at(7))
        .await;
    assert!(f.store.retire().await.unwrap(), "its generation has ended");
    assert!(!f.store.retire().await.unwrap(), "forgotten already");

    // A runner that stops while it holds a generation: the generation fails once the lease
    // lapses, for the replica above too (had the runner been forgotten, its lease would be
    // found only by a new process's first sweep).
    let stopping = f.another_runner();
    stopping.keep_alive(at(8)).await.unwrap();
    let held = f.chat(&acme, "bob").await;
    assert!(
        stopping
            .begin_generation(&acme, &held.id, at(9))
            .await
            .unwrap()
    );
    assert!(!stopping.retire().await.unwrap());
    assert_eq!(
        sweeper
            .fail_interrupted("interrupted", at(20), at(21))
            .await
            .unwrap(),
        1
    );
    let held = f.get(&held).await.unwrap();
    assert_eq!(held.status, Some(ChatStatus::Error));
    assert_eq!(held.error.as_deref(), Some("interrupted"));
    assert_eq!(f.get(&chat).await.unwrap().status, None);
}

pub async fn update_saves_title_deletion_and_time_only(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let untouched = f.chat(&acme, "alice").await;
    assert!(f.begin(&chat, at(5)).await);
    let stored = f.get(&chat).await.unwrap();

    // Everything else in the record is ignored.
    let attempt = Chat {
        title: Some("Neuer Titel – 新标题".to_owned()),
        deleted_at: Some(at(10) + Duration::microseconds(5)),
        updated_at: at(10) + Duration::microseconds(5),
        owner: "mallory".to_owned(),
        model: ModelSnapshot {
            model_id: "other".to_owned(),
            base_model_id: "other".to_owned(),
            system_prompt: Some("other".to_owned()),
            system_prompt_id: Some(SystemPromptId::generate()),
        },
        status: Some(ChatStatus::Error),
        error: Some("other".to_owned()),
        created_at: at(99),
        ..stored.clone()
    };
    assert!(f.store.update(&attempt).await.unwrap());
    let saved = Chat {
        title: attempt.title.clone(),
        deleted_at: attempt.deleted_at,
        updated_at: attempt.updated_at,
        ..stored.clone()
    };
    assert_eq!(f.get(&chat).await, Some(saved.clone()));
    assert!(f.all(&live(&acme)).await.iter().all(|c| c.id != chat.id));

    // Cleared and restored.
    let restored = Chat {
        title: None,
        deleted_at: None,
        updated_at: at(11),
        ..saved
    };
    assert!(f.store.update(&restored).await.unwrap());
    assert_eq!(f.get(&chat).await, Some(restored.clone()));
    assert!(f.all(&live(&acme)).await.contains(&restored));

    assert!(!f.store.update(&chat_of(&acme)).await.unwrap());
    assert_eq!(f.get(&untouched).await, Some(untouched));
    assert_eq!(f.store.count(&with_deleted(live(&acme))).await.unwrap(), 2);
}

pub async fn concurrent_starts_have_one_winner(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    for round in 0..5 {
        let barrier = Arc::new(tokio::sync::Barrier::new(10));
        let tasks: Vec<_> = (0..10)
            .map(|i| {
                let (store, barrier) = (f.store.clone(), barrier.clone());
                let (organization, id) = (acme.clone(), chat.id.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    store
                        .begin_generation(&organization, &id, at(100 + i))
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut started = 0;
        for task in tasks {
            if task.await.unwrap() {
                started += 1;
            }
        }
        assert_eq!(started, 1, "round {round}");
        assert_eq!(
            f.get(&chat).await.unwrap().status,
            Some(ChatStatus::Generating)
        );
        let turn = vec![message(&chat, round * 2, Role::User, "go")];
        f.finish(&chat, &turn, at(200)).await;
    }
    assert_eq!(f.messages(&chat).await.len(), 5);
}
