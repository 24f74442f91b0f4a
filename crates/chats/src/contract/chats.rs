//! Checks of chat records: reading back, tenancy, lists and pages.

use super::*;

pub async fn chats_read_back_unchanged(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;

    let rich = rich_chat(&acme);
    f.store.insert(&rich).await.unwrap();
    assert_eq!(f.get(&rich).await, Some(rich.clone()), "deleted or not");

    let plain = f.chat(&acme, "alice").await;
    assert_eq!(f.get(&plain).await, Some(plain.clone()));

    // A new chat may be stored already generating (its first turn starts with it).
    let generating = Chat {
        status: Some(ChatStatus::Generating),
        title: Some("é".repeat(500)),
        ..chat(&acme, "bob")
    };
    f.store.insert(&generating).await.unwrap();
    assert_eq!(f.get(&generating).await, Some(generating.clone()));

    assert_eq!(f.store.get(&acme, &ChatId::generate()).await.unwrap(), None);
    assert!(f.messages(&plain).await.is_empty());
    assert!(
        f.store
            .messages(&acme, &ChatId::generate())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.store.count(&live(&acme)).await.unwrap(), 2);
    assert_eq!(f.store.count(&with_deleted(live(&acme))).await.unwrap(), 3);
}

pub async fn duplicate_chat_ids_are_refused(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let original = f.chat(&acme, "alice").await;
    let again = Chat {
        title: Some("again".to_owned()),
        owner: "mallory".to_owned(),
        ..original.clone()
    };
    let refused = f.store.insert(&again).await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(f.get(&original).await, Some(original));
    assert_eq!(f.store.count(&live(&acme)).await.unwrap(), 1);
}

pub async fn another_organization_cannot_reach_a_chat(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let chat = f.chat(&acme, "alice").await;
    let turn = rich_turn(&chat, 0);
    let finished = FinishedTurn {
        artifacts: vec![artifact(&chat, &turn[9], "plan", 1)],
        ..turn_of(&chat, &turn, at(20))
    };
    f.finish_turn(&chat, &finished, at(20)).await;
    let stored = f.get(&chat).await.unwrap();
    let theirs = artifacts_of(&globex, None, None);

    assert_eq!(f.store.get(&globex, &chat.id).await.unwrap(), None);
    assert!(
        f.store
            .messages(&globex, &chat.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(f.all(&with_deleted(live(&globex))).await.is_empty());
    assert!(
        f.all(&with_deleted(owned_by(&globex, "alice")))
            .await
            .is_empty()
    );
    assert_eq!(
        f.store.count(&with_deleted(live(&globex))).await.unwrap(),
        0
    );
    assert!(
        !f.store
            .begin_generation(&globex, &chat.id, at(40))
            .await
            .unwrap()
    );
    assert!(
        f.store
            .artifact_versions(&globex, &chat.id)
            .await
            .unwrap()
            .is_empty()
    );
    let artifact_id = &finished.artifacts[0].id;
    assert_eq!(f.artifacts.get(&globex, artifact_id).await.unwrap(), None);
    assert!(f.all_artifacts(&theirs).await.is_empty());
    assert!(
        f.all_artifacts(&artifacts_of(&globex, Some("alice"), Some(&chat.id)))
            .await
            .is_empty()
    );
    assert_eq!(f.artifacts.count(&theirs).await.unwrap(), 0);

    // Writes in another organization's name (its usage and artifacts) change nothing.
    let as_globex = Chat {
        organization_id: globex.clone(),
        ..chat.clone()
    };
    let more = vec![message(&chat, 10, Role::Assistant, "hijacked")];
    let hijack = FinishedTurn {
        artifacts: vec![artifact(&as_globex, &more[0], "plan", 2)],
        ..turn_of(&as_globex, &more, at(41))
    };
    let refused = f
        .store
        .finish_generation(&globex, &chat.id, &hijack, at(41))
        .await;
    assert!(is_not_found(&refused), "{refused:?}");
    let spent = usage_record(&as_globex, &MessageId::generate(), at(42));
    let failed = f
        .store
        .fail_generation(&globex, &chat.id, "hijacked", Some(spent.clone()), at(42))
        .await;
    assert!(is_not_found(&failed), "{failed:?}");
    let failed = f
        .store
        .fail_generation(&globex, &chat.id, "hijacked", None, at(42))
        .await;
    assert!(is_not_found(&failed), "{failed:?}");
    let hijacked = Chat {
        organization_id: globex.clone(),
        title: Some("hijacked".to_owned()),
        deleted_at: Some(at(43)),
        updated_at: at(43),
        ..stored.clone()
    };
    assert!(!f.store.update(&hijacked).await.unwrap());

    assert_eq!(
        f.get(&chat).await,
        Some(stored.clone()),
        "the owner's chat is untouched"
    );
    assert_eq!(f.messages(&chat).await, turn);
    assert_eq!(f.all(&live(&acme)).await, vec![stored]);
    assert_eq!(f.recorded_usage().await, vec![finished.usage.clone()]);
    assert_eq!(
        f.all_artifacts(&artifacts_of(&acme, None, None)).await,
        finished.artifacts
    );
    assert!(f.all_artifacts(&theirs).await.is_empty());
    assert_eq!(f.versions(&chat).await, versions(&[("plan", 1)]));
}

pub async fn lists_are_newest_first_and_filtered(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let mut alice = Vec::new();
    let mut bob = Vec::new();
    let mut deleted = Vec::new();
    let mut theirs = Vec::new();
    for i in 0..12 {
        let owner = if i % 2 == 0 { "alice" } else { "bob" };
        if i % 4 == 3 {
            deleted.push(f.deleted_chat(&acme, owner).await);
        } else if owner == "alice" {
            alice.push(f.chat(&acme, owner).await);
        } else {
            bob.push(f.chat(&acme, owner).await);
        }
        // Interleaved chats of another organization, of the same owner names, never show up.
        if i % 3 == 0 {
            theirs.push(f.chat(&globex, owner).await);
        }
    }
    let live_all = newest_first([alice.clone(), bob.clone()].concat());
    let every = newest_first([live_all.clone(), deleted.clone()].concat());
    let alice_all = newest_first(
        [
            alice.clone(),
            deleted
                .iter()
                .filter(|c| c.owner == "alice")
                .cloned()
                .collect(),
        ]
        .concat(),
    );

    assert_eq!(f.all(&live(&acme)).await, live_all);
    assert_eq!(
        f.all(&owned_by(&acme, "alice")).await,
        newest_first(alice.clone())
    );
    assert_eq!(
        f.all(&owned_by(&acme, "bob")).await,
        newest_first(bob.clone())
    );
    assert_eq!(f.all(&with_deleted(live(&acme))).await, every);
    assert_eq!(
        f.all(&with_deleted(owned_by(&acme, "alice"))).await,
        alice_all
    );
    assert!(f.all(&owned_by(&acme, "carol")).await.is_empty());
    assert_eq!(f.all(&live(&globex)).await, newest_first(theirs.clone()));

    assert_eq!(f.store.count(&live(&acme)).await.unwrap(), 9);
    assert_eq!(f.store.count(&with_deleted(live(&acme))).await.unwrap(), 12);
    assert_eq!(f.store.count(&owned_by(&acme, "alice")).await.unwrap(), 6);
    assert_eq!(
        f.store
            .count(&with_deleted(owned_by(&acme, "bob")))
            .await
            .unwrap(),
        6
    );
    assert_eq!(f.store.count(&owned_by(&acme, "carol")).await.unwrap(), 0);
    assert_eq!(f.store.count(&live(&globex)).await.unwrap(), 4);
    assert_eq!(
        f.store
            .count(&live(&OrganizationId::generate()))
            .await
            .unwrap(),
        0
    );

    // A page fetches one extra row to tell whether more exist; `after` is exclusive.
    let store = &f.store;
    assert_eq!(
        store.list(&live(&acme), &page(2, None)).await.unwrap(),
        live_all[..3]
    );
    assert_eq!(
        store
            .list(&live(&acme), &page(2, Some(&live_all[1].id)))
            .await
            .unwrap(),
        live_all[2..5]
    );
    assert!(
        store
            .list(&live(&acme), &page(2, Some(&live_all[8].id)))
            .await
            .unwrap()
            .is_empty()
    );
    // A cursor naming a deleted chat, or another organization's, still pages by id.
    for cursor in [&deleted[1].id, &theirs[2].id] {
        let expected: Vec<Chat> = live_all
            .iter()
            .filter(|c| &c.id < cursor)
            .take(3)
            .cloned()
            .collect();
        assert_eq!(
            store
                .list(&live(&acme), &page(2, Some(cursor)))
                .await
                .unwrap(),
            expected
        );
    }
    assert!(
        store
            .list(&live(&OrganizationId::generate()), &page(10, None))
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn keyset_pages_have_no_gaps_or_duplicates(stores: &impl ChatStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let mut mine = Vec::new();
    for i in 0..25 {
        mine.push(f.chat(&acme, "alice").await);
        // Chats of another owner and deleted ones are skipped, not counted against a page.
        if i % 5 == 0 {
            f.chat(&acme, "bob").await;
            f.deleted_chat(&acme, "alice").await;
        }
    }
    let expected = newest_first(mine);
    let filter = owned_by(&acme, "alice");

    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    let mut after: Option<ChatId> = None;
    loop {
        let mut rows = f
            .store
            .list(&filter, &page(10, after.as_ref()))
            .await
            .unwrap();
        let has_more = rows.len() > 10;
        rows.truncate(10);
        sizes.push(rows.len());
        after = rows.last().map(|c| c.id.clone());
        seen.extend(rows);
        if sizes.len() == 1 {
            // A chat created while paging is newer than every cursor: later pages skip it.
            f.chat(&acme, "alice").await;
        }
        if !has_more {
            break;
        }
    }
    assert_eq!(sizes, [10, 10, 5]);
    let unique: HashSet<&ChatId> = seen.iter().map(|c| &c.id).collect();
    assert_eq!(unique.len(), seen.len(), "no duplicates");
    assert_eq!(seen, expected, "no gaps, newest first");
    assert_eq!(f.store.count(&filter).await.unwrap(), 26);
}
