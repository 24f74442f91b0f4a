//! System prompts and their placements: reads, layouts now and in the past, placement
//! history, changes and deletion, unique slugs.

use super::*;

/// System prompts read back unchanged, are visible to their organization (system ones to
/// all), and are listed and counted per owner.
pub async fn prompts_read_back_and_are_visible_to_their_organization(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let mut mine = prompt(&owner, "Prompt – Ünïcode ✓", at(0));
    mine.enabled = false;
    mine.description = String::new();
    mine.updated_at = at(1) + micros(3);
    f.prompts.insert(&mine, &[], &[]).await.unwrap();
    let mut system = prompt(&Owner::System, "General", at(0));
    system.slug = Some("general-assistant".into());
    f.prompts.insert(&system, &[], &[]).await.unwrap();

    assert_eq!(
        f.prompts.get(&acme, &mine.id).await.unwrap(),
        Some(mine.clone())
    );
    assert_eq!(f.prompts.get(&globex, &mine.id).await.unwrap(), None);
    for viewer in [&acme, &globex] {
        assert_eq!(
            f.prompts.get(viewer, &system.id).await.unwrap(),
            Some(system.clone())
        );
    }
    assert_eq!(
        f.prompts.get_system("general-assistant").await.unwrap(),
        Some(system.clone())
    );
    assert_eq!(f.prompts.get_system("unknown").await.unwrap(), None);
    assert_eq!(
        f.prompts
            .get(&acme, &SystemPromptId::generate())
            .await
            .unwrap(),
        None
    );
    assert!(f.layout(&mine.id, None).await.is_empty());

    // Listings are per owner, ordered by id, paged with one extra row.
    let mut listed = vec![mine.clone()];
    for i in 0..4 {
        listed.push(f.prompt(&owner, &format!("p{i}"), at(i), &[]).await.0);
        f.prompt(&org(&globex), &format!("g{i}"), at(i), &[]).await;
    }
    let limit = Limit::new(2).unwrap();
    assert_eq!(
        f.prompts
            .list(&owner, &PageRequest::first(limit))
            .await
            .unwrap(),
        listed[..3]
    );
    let after = PageRequest {
        limit,
        after: Some(listed[2].id.clone()),
    };
    assert_eq!(f.prompts.list(&owner, &after).await.unwrap(), listed[3..]);
    assert_eq!(
        f.prompts
            .list(&Owner::System, &PageRequest::first(limit))
            .await
            .unwrap(),
        vec![system]
    );
    assert_eq!(f.prompts.count(&owner).await.unwrap(), 5);
    assert_eq!(f.prompts.count(&org(&globex)).await.unwrap(), 4);
    assert_eq!(f.prompts.count(&Owner::System).await.unwrap(), 1);
    assert_eq!(
        f.prompts
            .count(&org(&OrganizationId::generate()))
            .await
            .unwrap(),
        0
    );
}

/// Layouts resolve pins to their version and other placements to the latest version, now or
/// as of a past moment, for several prompts at once.
pub async fn layouts_resolve_pins_and_latest_versions_now_and_then(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let owner = org(&acme);
    let mut role = f.particle(&owner, "role", Category::Role, at(0)).await;
    let mut format = f.particle(&owner, "format", Category::Format, at(0)).await;
    let mut system = f
        .particle(&Owner::System, "guardrails", Category::Guardrails, at(0))
        .await;
    let role_v1 = role.latest.clone();
    let (prompt, placements) = f
        .prompt(
            &owner,
            "prompt",
            at(10),
            &[
                (&role, 2, Some(&role_v1)),
                (&format, 1, None),
                (&system, 0, None),
            ],
        )
        .await;
    let (other, _) = f
        .prompt(&owner, "other", at(10), &[(&format, 5, None)])
        .await;
    f.next_version(&mut role, "role two", at(20)).await;
    let format_v2 = f.next_version(&mut format, "format two", at(20)).await;
    f.next_version(&mut format, "format three", at(30)).await;
    f.next_version(&mut system, "guardrails two", at(30)).await;

    let now = f.layout(&prompt.id, None).await;
    assert_eq!(
        now.iter()
            .map(|e| (e.category, e.order, e.number, e.pinned, e.content.as_str()))
            .collect::<Vec<_>>(),
        vec![
            (Category::Role, 2, 1, Some(1), "role v1"),
            (Category::Guardrails, 0, 2, None, "guardrails two"),
            (Category::Format, 1, 3, None, "format three"),
        ]
    );
    for (entry, placement) in now
        .iter()
        .zip([&placements[0], &placements[2], &placements[1]])
    {
        assert_eq!(entry.association, placement.id);
        assert_eq!(entry.particle, placement.particle_id);
        assert_eq!(entry.valid_from, at(10));
    }

    let numbers = |layout: Vec<Resolved>| -> Vec<u32> { layout.iter().map(|e| e.number).collect() };
    assert_eq!(
        numbers(f.layout(&prompt.id, Some(at(10))).await),
        vec![1, 1, 1]
    );
    assert_eq!(
        numbers(f.layout(&prompt.id, Some(at(25))).await),
        vec![1, 1, 2]
    );
    assert_eq!(
        numbers(f.layout(&prompt.id, Some(at(30))).await),
        vec![1, 2, 3]
    );
    assert!(
        f.layout(&prompt.id, Some(at(10) - micros(1)))
            .await
            .is_empty(),
        "nothing was placed before the prompt existed"
    );

    // Several prompts at once; each entry names its prompt; unknown prompts add nothing.
    let both = f
        .prompts
        .layouts(
            &[
                prompt.id.clone(),
                other.id.clone(),
                SystemPromptId::generate(),
            ],
            Some(at(25)),
        )
        .await
        .unwrap();
    assert_eq!(both.len(), 4);
    let of_other: Vec<&ResolvedAssociation> = both
        .iter()
        .filter(|e| e.association.system_prompt_id == other.id)
        .collect();
    assert_eq!(of_other.len(), 1);
    assert_eq!(of_other[0].version, format_v2);
    assert_eq!(of_other[0].particle_name, "format");
    assert_eq!(of_other[0].category, Category::Format);
    assert!(f.prompts.layouts(&[], None).await.unwrap().is_empty());

    // Names and categories are the particle's current ones, also for past moments.
    assert!(
        f.particles
            .update_details(&owner, &format.id, "renamed", "", at(40), &[])
            .await
            .unwrap()
    );
    let past = f.layout(&other.id, Some(at(15))).await;
    assert_eq!(past[0].name, "renamed");
    assert_eq!(past[0].number, 1);
}

/// Layouts as of a moment compare instants to the microsecond, whatever their text form.
pub async fn layouts_tell_microseconds_apart(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let owner = org(&acme);
    // Instants whose text forms differ in length (whole seconds, milliseconds, a second
    // boundary): the comparisons must still be by time.
    let whole = Utc.with_ymd_and_hms(2026, 5, 6, 7, 8, 9).unwrap();
    let mut p = f
        .particle(&owner, "role", Category::Role, whole - micros(1))
        .await;
    let (prompt, placements) = f.prompt(&owner, "prompt", whole, &[(&p, 0, None)]).await;
    f.next_version(&mut p, "two", whole + micros(1)).await;
    let millis = whole + Duration::milliseconds(100);
    f.next_version(&mut p, "three", millis).await;
    f.next_version(&mut p, "four", millis + micros(1)).await;
    let boundary = whole + Duration::seconds(1);
    f.next_version(&mut p, "five", boundary - micros(1)).await;
    f.next_version(&mut p, "six", boundary).await;

    let number_at = async |t: DateTime<Utc>| -> Option<u32> {
        let layout = f.layout(&prompt.id, Some(t)).await;
        assert!(layout.len() <= 1);
        layout.first().map(|e| e.number)
    };
    assert_eq!(number_at(whole - micros(1)).await, None, "not yet placed");
    assert_eq!(number_at(whole).await, Some(1));
    assert_eq!(number_at(whole + micros(1)).await, Some(2));
    assert_eq!(number_at(millis - micros(1)).await, Some(2));
    assert_eq!(number_at(millis).await, Some(3));
    assert_eq!(number_at(millis + micros(1)).await, Some(4));
    assert_eq!(number_at(boundary - micros(2)).await, Some(4));
    assert_eq!(number_at(boundary - micros(1)).await, Some(5));
    assert_eq!(number_at(boundary).await, Some(6));

    // A placement ends exactly when it is removed.
    let removed = boundary + micros(10);
    assert!(
        f.prompts
            .remove_association(&owner, &prompt.id, &placements[0].id, removed, &[])
            .await
            .unwrap()
    );
    assert_eq!(number_at(removed - micros(1)).await, Some(6));
    assert_eq!(number_at(removed).await, None);
}

/// Only the owner changes or removes a placement; each change touches the prompt and keeps
/// the history, so every past moment reads back the placement then in effect.
pub async fn placement_changes_keep_their_history(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let mut p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let v1 = p.latest.clone();
    let (mut prompt, placements) = f.prompt(&owner, "prompt", at(1), &[(&p, 3, None)]).await;
    let placement = &placements[0];
    f.next_version(&mut p, "two", at(2)).await;

    // Refused: another owner, an unknown placement, or one of another prompt.
    let (other, _) = f.prompt(&owner, "other", at(1), &[]).await;
    for (who, prompt_id, id) in [
        (org(&globex), &prompt.id, &placement.id),
        (Owner::System, &prompt.id, &placement.id),
        (owner.clone(), &prompt.id, &AssociationId::generate()),
        (owner.clone(), &other.id, &placement.id),
        (owner.clone(), &SystemPromptId::generate(), &placement.id),
    ] {
        assert!(
            !f.prompts
                .update_association(&who, prompt_id, id, 9, Some(pin_of(&v1)), at(3), &[])
                .await
                .unwrap()
        );
        assert!(
            !f.prompts
                .remove_association(&who, prompt_id, id, at(3), &[])
                .await
                .unwrap()
        );
    }
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone()),
        "refused changes do not touch the prompt"
    );
    assert_eq!(
        f.prompts.get(&acme, &other.id).await.unwrap(),
        Some(other.clone())
    );

    // Move and pin at t4: the current layout shows it, the past one does not.
    assert!(
        f.prompts
            .update_association(
                &owner,
                &prompt.id,
                &placement.id,
                7,
                Some(pin_of(&v1)),
                at(4),
                &[],
            )
            .await
            .unwrap()
    );
    prompt.updated_at = at(4);
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone())
    );
    let summary = |layout: Vec<Resolved>| -> Vec<Summary> {
        layout
            .into_iter()
            .map(|e| (e.association, e.order, e.number, e.pinned, e.valid_from))
            .collect()
    };
    let id = placement.id.clone();
    assert_eq!(
        summary(f.layout(&prompt.id, None).await),
        vec![(id.clone(), 7, 1, Some(1), at(4))]
    );
    assert_eq!(
        summary(f.layout(&prompt.id, Some(at(4))).await),
        vec![(id.clone(), 7, 1, Some(1), at(4))]
    );
    assert_eq!(
        summary(f.layout(&prompt.id, Some(at(4) - micros(1))).await),
        vec![(id.clone(), 3, 2, None, at(1))]
    );
    assert_eq!(
        summary(f.layout(&prompt.id, Some(at(1))).await),
        vec![(id.clone(), 3, 1, None, at(1))]
    );

    // Unpinned again at t5, then changed twice within one instant: the last change holds.
    assert!(
        f.prompts
            .update_association(&owner, &prompt.id, &id, 7, None, at(5), &[])
            .await
            .unwrap()
    );
    assert!(
        f.prompts
            .update_association(&owner, &prompt.id, &id, 8, Some(pin_of(&v1)), at(6), &[])
            .await
            .unwrap()
    );
    assert!(
        f.prompts
            .update_association(&owner, &prompt.id, &id, 0, None, at(6), &[])
            .await
            .unwrap()
    );
    assert_eq!(
        summary(f.layout(&prompt.id, None).await),
        vec![(id.clone(), 0, 2, None, at(6))]
    );
    assert_eq!(
        summary(f.layout(&prompt.id, Some(at(5))).await),
        vec![(id.clone(), 7, 2, None, at(5))]
    );
    assert_eq!(
        summary(f.layout(&prompt.id, Some(at(4) + micros(1))).await),
        vec![(id.clone(), 7, 1, Some(1), at(4))]
    );

    // Removal ends the placement for good.
    assert!(
        f.prompts
            .remove_association(&owner, &prompt.id, &id, at(7), &[])
            .await
            .unwrap()
    );
    prompt.updated_at = at(7);
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone())
    );
    assert!(f.layout(&prompt.id, None).await.is_empty());
    assert_eq!(
        summary(f.layout(&prompt.id, Some(at(7) - micros(1))).await),
        vec![(id.clone(), 0, 2, None, at(6))]
    );
    assert!(
        !f.prompts
            .remove_association(&owner, &prompt.id, &id, at(8), &[])
            .await
            .unwrap()
    );
    assert!(
        !f.prompts
            .update_association(&owner, &prompt.id, &id, 1, None, at(8), &[])
            .await
            .unwrap()
    );
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt)
    );
}

/// Placements are added to the owner's prompts only, and touch the prompt.
pub async fn placements_are_added_to_the_owners_prompts_only(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let system_particle = f
        .particle(&Owner::System, "tone", Category::Tone, at(0))
        .await;
    let (mut prompt, _) = f.prompt(&owner, "prompt", at(1), &[]).await;
    let (system_prompt, _) = f.prompt(&Owner::System, "profile", at(1), &[]).await;

    let refused = association(&prompt, &p, 0, None, at(2));
    assert!(
        !f.prompts
            .add_association(&org(&globex), &refused, &[])
            .await
            .unwrap()
    );
    assert!(
        !f.prompts
            .add_association(&Owner::System, &refused, &[])
            .await
            .unwrap()
    );
    let into_system = association(&system_prompt, &system_particle, 0, None, at(2));
    assert!(
        !f.prompts
            .add_association(&owner, &into_system, &[])
            .await
            .unwrap()
    );
    assert!(f.layout(&prompt.id, None).await.is_empty());
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone())
    );

    let mine = association(&prompt, &p, 1, Some(&p.latest), at(3));
    assert!(f.prompts.add_association(&owner, &mine, &[]).await.unwrap());
    let theirs = association(&prompt, &system_particle, 0, None, at(3) + micros(1));
    assert!(
        f.prompts
            .add_association(&owner, &theirs, &[])
            .await
            .unwrap()
    );
    prompt.updated_at = at(3) + micros(1);
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone())
    );
    assert!(
        f.prompts
            .add_association(&Owner::System, &into_system, &[])
            .await
            .unwrap()
    );

    let layout = f
        .prompts
        .layouts(std::slice::from_ref(&prompt.id), None)
        .await
        .unwrap();
    let mut associations: Vec<Association> = layout.into_iter().map(|e| e.association).collect();
    associations.sort_by_key(|a| a.valid_from);
    assert_eq!(associations, vec![mine, theirs]);
    assert_eq!(f.layout(&system_prompt.id, None).await.len(), 1);
}

/// Only the owner updates (name, description, enabled) or deletes a prompt; deletion takes
/// its placements with it.
pub async fn prompts_are_updated_and_deleted_by_their_owner(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let globex = f.organization("Globex").await;
    let owner = org(&acme);
    let p = f.particle(&owner, "role", Category::Role, at(0)).await;
    let (prompt, _) = f
        .prompt(
            &owner,
            "prompt",
            at(1),
            &[(&p, 0, None), (&p, 1, Some(&p.latest))],
        )
        .await;

    let mut changed = prompt.clone();
    changed.name = "Renamed ✓".into();
    changed.description = "new".into();
    changed.enabled = false;
    changed.updated_at = at(2) + micros(9);
    assert!(
        !f.prompts
            .update(&org(&globex), &changed, &[])
            .await
            .unwrap()
    );
    assert!(
        !f.prompts
            .update(&Owner::System, &changed, &[])
            .await
            .unwrap()
    );
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(prompt.clone())
    );
    // Only name, description, enabled and updated_at are saved.
    let mut attempt = changed.clone();
    attempt.slug = Some("sneaky".into());
    attempt.created_at = at(99);
    assert!(f.prompts.update(&owner, &attempt, &[]).await.unwrap());
    assert_eq!(
        f.prompts.get(&acme, &prompt.id).await.unwrap(),
        Some(changed)
    );
    let mut unknown = prompt.clone();
    unknown.id = SystemPromptId::generate();
    assert!(!f.prompts.update(&owner, &unknown, &[]).await.unwrap());

    assert!(
        !f.prompts
            .delete(&org(&globex), &prompt.id, &[])
            .await
            .unwrap()
    );
    assert!(
        !f.prompts
            .delete(&Owner::System, &prompt.id, &[])
            .await
            .unwrap()
    );
    assert_eq!(f.layout(&prompt.id, None).await.len(), 2);
    assert!(f.prompts.delete(&owner, &prompt.id, &[]).await.unwrap());
    assert_eq!(f.prompts.get(&acme, &prompt.id).await.unwrap(), None);
    assert!(f.layout(&prompt.id, None).await.is_empty());
    assert!(f.layout(&prompt.id, Some(at(1))).await.is_empty());
    assert_eq!(f.prompts.count(&owner).await.unwrap(), 0);
    assert!(!f.prompts.delete(&owner, &prompt.id, &[]).await.unwrap());
    // Its placements went with it, so the particle is free to go.
    assert_eq!(
        f.particles.delete(&owner, &p.id, at(3), &[]).await.unwrap(),
        ParticleDeletion::Deleted
    );
}

/// Slugs of system particles and prompts are unique; organizations' records have none and
/// never collide.
pub async fn slugs_and_ids_are_unique(stores: &impl PromptStores) {
    let f = Fixture::new(stores);
    let acme = f.organization("Acme").await;
    let mut tone = particle(&Owner::System, "tone", Category::Tone, at(0));
    tone.slug = Some("friendly-tone".into());
    f.particles.insert(&tone, &[]).await.unwrap();
    let mut again = particle(&Owner::System, "tone again", Category::Tone, at(1));
    again.slug = Some("friendly-tone".into());
    assert!(is_conflict(f.particles.insert(&again, &[]).await));
    assert_eq!(
        f.particles.get_system("friendly-tone").await.unwrap(),
        Some(tone.clone())
    );
    assert_eq!(f.particles.count(&Owner::System, None).await.unwrap(), 1);
    // Organizations' particles have no slug and never collide.
    f.particle(&org(&acme), "a", Category::Role, at(0)).await;
    f.particle(&org(&acme), "b", Category::Role, at(0)).await;

    let mut profile = prompt(&Owner::System, "profile", at(0));
    profile.slug = Some("general-assistant".into());
    f.prompts.insert(&profile, &[], &[]).await.unwrap();
    let mut twin = prompt(&Owner::System, "twin", at(1));
    twin.slug = Some("general-assistant".into());
    assert!(is_conflict(f.prompts.insert(&twin, &[], &[]).await));
    assert_eq!(
        f.prompts.get_system("general-assistant").await.unwrap(),
        Some(profile)
    );
    assert_eq!(f.prompts.count(&Owner::System).await.unwrap(), 1);
    f.prompt(&org(&acme), "a", at(0), &[]).await;
    f.prompt(&org(&acme), "b", at(0), &[]).await;
}
