//! Checks of finished turns' usage records and artifacts.

use super::*;

pub async fn finishing_stores_the_usage_and_the_artifacts(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let chat = f.chat(&acme, "alice").await;
    let other = f.chat(&acme, "alice").await;
    assert!(f.versions(&chat).await.is_empty());

    assert!(f.begin(&chat, at(10)).await);
    let first = turn_with_artifacts(&chat, 0, &[("plan", 1), ("readme", 1)], at(11));
    f.finish_turn(&chat, &first, at(11)).await;
    assert_eq!(f.messages(&chat).await, first.messages);
    assert_eq!(f.recorded_usage().await, vec![first.usage.clone()]);
    for artifact in &first.artifacts {
        assert_eq!(
            f.artifacts.get(&acme, &artifact.id).await.unwrap().as_ref(),
            Some(artifact),
            "read back unchanged"
        );
    }
    assert_eq!(
        f.versions(&chat).await,
        versions(&[("plan", 1), ("readme", 1)])
    );
    assert_eq!(f.get(&chat).await.unwrap().status, None);

    // The next turn revises one artifact and adds another.
    assert!(f.begin(&chat, at(12)).await);
    let second = turn_with_artifacts(&chat, 2, &[("plan", 2), ("diagram", 1)], at(13));
    f.finish_turn(&chat, &second, at(13)).await;
    assert_eq!(
        f.messages(&chat).await,
        [first.messages.clone(), second.messages.clone()].concat()
    );
    assert_eq!(
        f.recorded_usage().await,
        vec![first.usage.clone(), second.usage.clone()]
    );
    assert_eq!(
        f.versions(&chat).await,
        versions(&[("plan", 2), ("readme", 1), ("diagram", 1)])
    );
    let of_chat = artifacts_of(&acme, None, Some(&chat.id));
    let both = newest_artifacts_first([first.artifacts.clone(), second.artifacts.clone()].concat());
    assert_eq!(f.all_artifacts(&of_chat).await, both);
    assert_eq!(f.artifacts.count(&of_chat).await.unwrap(), 4);

    // Versions are per chat and per organization.
    assert!(f.versions(&other).await.is_empty());
    assert!(
        f.store
            .artifact_versions(&globex, &chat.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(f.versions(&chat_of(&acme)).await.is_empty());
    let theirs = turn_with_artifacts(&other, 0, &[("plan", 1)], at(14));
    f.finish_turn(&other, &theirs, at(14)).await;
    assert_eq!(f.versions(&other).await, versions(&[("plan", 1)]));
    assert_eq!(
        f.versions(&chat).await,
        versions(&[("plan", 2), ("readme", 1), ("diagram", 1)])
    );
    assert_eq!(f.recorded_usage().await.len(), 3);
    assert_eq!(
        f.all_artifacts(&artifacts_of(&acme, None, Some(&other.id)))
            .await,
        theirs.artifacts
    );
}

/// The chat is still `generating` with `before`'s messages, usage and artifacts only.
async fn assert_unchanged(f: &Fixture<'_>, generating: &Chat, before: &FinishedTurn, case: &str) {
    assert_eq!(f.get(generating).await.as_ref(), Some(generating), "{case}");
    assert_eq!(f.messages(generating).await, before.messages, "{case}");
    assert_eq!(
        f.recorded_usage().await,
        vec![before.usage.clone()],
        "{case}"
    );
    assert_eq!(
        f.all_artifacts(&artifacts_of(&generating.organization_id, None, None))
            .await,
        newest_artifacts_first(before.artifacts.clone()),
        "{case}"
    );
    assert_eq!(
        f.versions(generating).await,
        versions(&[("plan", 1)]),
        "{case}"
    );
}

pub async fn a_recorded_usage_or_a_taken_artifact_version_rolls_the_finish_back(
    stores: &impl ChatStores,
) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let elsewhere = f.chat(&acme, "alice").await;
    let first = turn_with_artifacts(&chat, 0, &[("plan", 1)], at(11));
    f.finish_turn(&chat, &first, at(11)).await;
    assert!(f.begin(&chat, at(12)).await);
    let generating = f.get(&chat).await.unwrap();

    let mut cases = Vec::new();
    // The usage of an answer already recorded.
    let mut recorded_message = turn_with_artifacts(&chat, 2, &[("readme", 1)], at(13));
    recorded_message.usage.message_id = first.usage.message_id.clone();
    cases.push(("usage of a recorded message", recorded_message));
    // A usage record id already taken.
    let mut recorded_id = turn_with_artifacts(&chat, 2, &[("readme", 1)], at(13));
    recorded_id.usage.id = first.usage.id.clone();
    cases.push(("usage id taken", recorded_id));
    // A new artifact first, the taken version last.
    cases.push((
        "artifact version taken",
        turn_with_artifacts(&chat, 2, &[("readme", 1), ("plan", 1)], at(13)),
    ));
    // An artifact of another chat.
    let mut stray = turn_with_artifacts(&chat, 2, &[("readme", 1)], at(13));
    stray.artifacts.push(Artifact {
        chat_id: elsewhere.id.clone(),
        ..artifact(&chat, &stray.messages[1], "stray", 1)
    });
    cases.push(("artifact of another chat", stray));

    for (case, turn) in &cases {
        let refused = f
            .store
            .finish_generation(&acme, &chat.id, turn, at(13))
            .await;
        assert!(is_conflict(&refused), "{case}: {refused:?}");
        assert_unchanged(&f, &generating, &first, case).await;
    }
    assert!(f.versions(&elsewhere).await.is_empty());

    // The generation can still finish properly.
    let next = turn_with_artifacts(&chat, 2, &[("readme", 1), ("plan", 2)], at(14));
    f.finish_turn(&chat, &next, at(14)).await;
    assert_eq!(
        f.versions(&chat).await,
        versions(&[("plan", 2), ("readme", 1)])
    );
    assert_eq!(
        f.messages(&chat).await,
        [first.messages.clone(), next.messages.clone()].concat()
    );
    assert_eq!(f.recorded_usage().await, vec![first.usage, next.usage]);
    assert_eq!(f.get(&chat).await.unwrap().status, None);
}

pub async fn one_turn_cannot_store_an_artifact_version_twice(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let first = turn_with_artifacts(&chat, 0, &[("plan", 1)], at(11));
    f.finish_turn(&chat, &first, at(11)).await;
    assert!(f.begin(&chat, at(12)).await);
    let generating = f.get(&chat).await.unwrap();

    let twice = turn_with_artifacts(&chat, 2, &[("readme", 1), ("readme", 1)], at(13));
    let refused = f
        .store
        .finish_generation(&acme, &chat.id, &twice, at(13))
        .await;
    assert!(is_conflict(&refused), "{refused:?}");
    assert_unchanged(&f, &generating, &first, "one version twice").await;
}

pub async fn failing_records_the_usage_of_a_failed_attempt(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let untouched = f.chat(&acme, "alice").await;
    assert!(f.begin(&chat, at(10)).await);
    let tokens = Tokens {
        input: 900,
        output: 12,
        reasoning: 0,
        cached_input: 0,
    };
    let spent = UsageRecord {
        tokens,
        credits: tokens.credits(1),
        finish_reason: FAILED.to_owned(),
        ..usage_record(&chat, &MessageId::generate(), at(11))
    };
    f.store
        .fail_generation(
            &acme,
            &chat.id,
            "provider said 500",
            Some(spent.clone()),
            at(11),
        )
        .await
        .unwrap();
    assert_eq!(
        f.get(&chat).await,
        Some(Chat {
            status: Some(ChatStatus::Error),
            error: Some("provider said 500".to_owned()),
            updated_at: at(11),
            ..chat.clone()
        })
    );
    assert!(f.messages(&chat).await.is_empty(), "nothing is appended");
    assert_eq!(f.recorded_usage().await, vec![spent.clone()]);

    // Without tokens spent, nothing is recorded.
    assert!(f.begin(&chat, at(12)).await);
    f.store
        .fail_generation(&acme, &chat.id, "timed out", None, at(13))
        .await
        .unwrap();
    let failed = f.get(&chat).await.unwrap();
    assert_eq!(
        (failed.status, failed.error.as_deref(), failed.updated_at),
        (Some(ChatStatus::Error), Some("timed out"), at(13))
    );
    assert_eq!(f.recorded_usage().await, vec![spent.clone()]);

    // The same answer's usage twice is refused, and the chat keeps generating.
    assert!(f.begin(&chat, at(14)).await);
    let generating = f.get(&chat).await.unwrap();
    let twice = UsageRecord {
        id: UsageId::generate(),
        ..spent.clone()
    };
    let refused = f
        .store
        .fail_generation(&acme, &chat.id, "again", Some(twice.clone()), at(15))
        .await;
    assert!(is_conflict(&refused), "{refused:?}");
    assert_eq!(f.get(&chat).await, Some(generating));
    assert_eq!(f.recorded_usage().await, vec![spent.clone()]);

    // An unknown chat records nothing.
    let unknown = chat_of(&acme);
    let lost = usage_record(&unknown, &MessageId::generate(), at(16));
    let refused = f
        .store
        .fail_generation(&acme, &unknown.id, "nobody", Some(lost.clone()), at(16))
        .await;
    assert!(is_not_found(&refused), "{refused:?}");
    assert_eq!(f.recorded_usage().await, vec![spent.clone()]);

    // A later finish records its own answer's usage.
    let turn = vec![
        message(&chat, 0, Role::User, "noch einmal"),
        message(&chat, 1, Role::Assistant, "gern"),
    ];
    f.finish(&chat, &turn, at(17)).await;
    let recorded = f.recorded_usage().await;
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0], spent);
    assert_eq!(recorded[1].message_id, turn[1].id.to_string());
    assert_eq!(f.get(&chat).await.unwrap().status, None);
    assert_eq!(f.get(&untouched).await, Some(untouched));
}

pub async fn artifacts_are_scoped_to_the_organization_and_filtered(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let first = f.chat(&acme, "alice").await;
    let second = f.chat(&acme, "alice").await;
    let bobs = f.chat(&acme, "bob").await;
    let theirs = f.chat(&globex, "alice").await;

    // Interleaved turns: every chat's artifacts are spread over the id order.
    let mut stored: Vec<Artifact> = Vec::new();
    for round in 0..3_u32 {
        for (chat, count) in [(&first, 2), (&second, 1), (&bobs, 2), (&theirs, 1)] {
            let found: Vec<(&str, u32)> = ["plan", "readme"][..count]
                .iter()
                .map(|identifier| (*identifier, round + 1))
                .collect();
            let turn = turn_with_artifacts(chat, round * 2, &found, at(20 + i64::from(round)));
            f.finish_turn(chat, &turn, at(20 + i64::from(round))).await;
            stored.extend(turn.artifacts);
        }
    }
    let expect = |keep: &dyn Fn(&Artifact) -> bool| {
        newest_artifacts_first(stored.iter().filter(|a| keep(a)).cloned().collect())
    };

    for artifact in &stored {
        let (mine, other) = if artifact.organization_id == acme {
            (&acme, &globex)
        } else {
            (&globex, &acme)
        };
        assert_eq!(
            f.artifacts.get(mine, &artifact.id).await.unwrap().as_ref(),
            Some(artifact)
        );
        assert_eq!(f.artifacts.get(other, &artifact.id).await.unwrap(), None);
    }
    assert_eq!(
        f.artifacts
            .get(&acme, &ArtifactId::generate())
            .await
            .unwrap(),
        None
    );

    let cases: Vec<(ArtifactFilter, Vec<Artifact>, u64)> = vec![
        (
            artifacts_of(&acme, None, None),
            expect(&|a| a.organization_id == acme),
            15,
        ),
        (
            artifacts_of(&acme, Some("alice"), None),
            expect(&|a| a.chat_id == first.id || a.chat_id == second.id),
            9,
        ),
        (
            artifacts_of(&acme, Some("bob"), None),
            expect(&|a| a.chat_id == bobs.id),
            6,
        ),
        (
            artifacts_of(&acme, None, Some(&first.id)),
            expect(&|a| a.chat_id == first.id),
            6,
        ),
        (
            artifacts_of(&acme, Some("alice"), Some(&second.id)),
            expect(&|a| a.chat_id == second.id),
            3,
        ),
        (
            artifacts_of(&acme, Some("bob"), Some(&first.id)),
            Vec::new(),
            0,
        ),
        (artifacts_of(&acme, Some("carol"), None), Vec::new(), 0),
        (artifacts_of(&acme, None, Some(&theirs.id)), Vec::new(), 0),
        (
            artifacts_of(&globex, None, None),
            expect(&|a| a.chat_id == theirs.id),
            3,
        ),
        (artifacts_of(&globex, Some("bob"), None), Vec::new(), 0),
        (artifacts_of(&globex, None, Some(&first.id)), Vec::new(), 0),
        (
            artifacts_of(&OrganizationId::generate(), None, None),
            Vec::new(),
            0,
        ),
    ];
    for (filter, expected, count) in &cases {
        assert_eq!(expected.len() as u64, *count, "{filter:?}");
        assert_eq!(&f.all_artifacts(filter).await, expected, "{filter:?}");
        assert_eq!(
            f.artifacts.count(filter).await.unwrap(),
            *count,
            "{filter:?}"
        );
    }

    // A page fetches one extra row; `after` is exclusive, and a cursor of another
    // organization's artifact still pages by id.
    let everything = artifacts_of(&acme, None, None);
    let all = expect(&|a| a.organization_id == acme);
    assert_eq!(
        f.artifacts.list(&everything, &page(2, None)).await.unwrap(),
        all[..3]
    );
    assert_eq!(
        f.artifacts
            .list(&everything, &page(2, Some(&all[1].id)))
            .await
            .unwrap(),
        all[2..5]
    );
    assert!(
        f.artifacts
            .list(&everything, &page(2, Some(&all[14].id)))
            .await
            .unwrap()
            .is_empty()
    );
    let cursor = &stored.iter().find(|a| a.chat_id == theirs.id).unwrap().id;
    let after_theirs: Vec<Artifact> = all
        .iter()
        .filter(|a| &a.id < cursor)
        .take(3)
        .cloned()
        .collect();
    assert_eq!(after_theirs.len(), 3, "the cursor is not the oldest");
    assert_eq!(
        f.artifacts
            .list(&everything, &page(2, Some(cursor)))
            .await
            .unwrap(),
        after_theirs
    );
}

pub async fn artifact_keyset_pages_have_no_gaps_or_duplicates(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let chat = f.chat(&acme, "alice").await;
    let bobs = f.chat(&acme, "bob").await;
    let mut mine = Vec::new();
    for round in 0..5_u32 {
        let version = round + 1;
        let found = [
            ("a", version),
            ("b", version),
            ("c", version),
            ("d", version),
            ("e", version),
        ];
        let when = at(20 + i64::from(round));
        let turn = turn_with_artifacts(&chat, round * 2, &found, when);
        f.finish_turn(&chat, &turn, when).await;
        mine.extend(turn.artifacts);
        // Another owner's artifacts are skipped, not counted against a page.
        let turn = turn_with_artifacts(&bobs, round * 2, &[("x", version)], when);
        f.finish_turn(&bobs, &turn, when).await;
    }
    let expected = newest_artifacts_first(mine);
    let filter = artifacts_of(&acme, Some("alice"), None);

    let mut seen: Vec<Artifact> = Vec::new();
    let mut sizes = Vec::new();
    let mut after: Option<ArtifactId> = None;
    loop {
        let mut rows = f
            .artifacts
            .list(&filter, &page(10, after.as_ref()))
            .await
            .unwrap();
        let has_more = rows.len() > 10;
        rows.truncate(10);
        sizes.push(rows.len());
        after = rows.last().map(|a| a.id.clone());
        seen.extend(rows);
        if sizes.len() == 1 {
            // An artifact stored while paging is newer than every cursor: later pages skip it.
            let turn = turn_with_artifacts(&chat, 10, &[("late", 1)], at(30));
            f.finish_turn(&chat, &turn, at(30)).await;
        }
        if !has_more {
            break;
        }
    }
    assert_eq!(sizes, [10, 10, 5]);
    let unique: HashSet<&ArtifactId> = seen.iter().map(|a| &a.id).collect();
    assert_eq!(unique.len(), seen.len(), "no duplicates");
    assert_eq!(seen, expected, "no gaps, newest first");
    assert_eq!(f.artifacts.count(&filter).await.unwrap(), 26);
    assert_eq!(
        f.artifacts
            .count(&artifacts_of(&acme, None, None))
            .await
            .unwrap(),
        31
    );
}
